"""goodput's pipelines: ingest, the core and analytics layers, the warehouse, the CLI and Dagster.

Importing the package first (the ``goodput`` command and the Dagster code location do) sets
polars' memory allocator (jemalloc, configured through ``_RJEM_MALLOC_CONF``) to hand freed
pages back to the system at once (``dirty_decay_ms:0,muzzy_decay_ms:0``) instead of keeping
them for about ten seconds: the build frees multi-gigabyte frames step after step, and pages
kept would count against the machine's memory as if still in use (BENCHMARKS.md "The Slurm
rows in parts" measures both settings). A value already in the environment wins; the setting
has no effect when polars was imported before this package.
"""

from __future__ import annotations

import os

os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
