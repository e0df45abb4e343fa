"""goodput's pipelines: ingest, the core and analytics layers, the warehouse, the CLI and Dagster.

Importing the package first (the ``goodput`` command and the Dagster code location do) sets
polars' memory allocator (jemalloc, configured through ``_RJEM_MALLOC_CONF``) to hand freed
pages back to the system after one second (``dirty_decay_ms:1000,muzzy_decay_ms:0``) instead of
ten: the build frees multi-gigabyte frames step after step, and pages kept would count against
the machine's memory as if still in use. On a 92-day build of the 10,000-GPU fleet this took the
peak from 2.2–2.4 GB to 1.7–1.8 GB for 4–5 % more CPU; returning pages at once (0 ms) saved a
little more memory for 40 % more CPU (BENCHMARKS.md "The Slurm rows in parts"). A value already
in the environment wins; the setting has no effect when polars was imported before this package.
"""

from __future__ import annotations

import os

os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:1000,muzzy_decay_ms:0")
