"""The applications run from a terminal: the ``goodput`` command and ``goodput materialize``.

:mod:`pipelines.cli.goodput` is the command (``ingest``, ``materialize``, ``sql``, ``generate``,
``app``), :mod:`pipelines.cli.report` adds ``report``, ``job`` and ``kpis``,
:mod:`pipelines.cli.k8s_watch` adds ``watch k8s``, and :mod:`pipelines.cli.runner` runs every
asset as Dagster runs on the local instance. ``python -m pipelines.cli`` is the ``goodput``
script.
"""

from __future__ import annotations

from pipelines.cli.goodput import app, main

__all__ = ["app", "main"]
