"""``python -m pipelines.cli``: the ``goodput`` command."""

from __future__ import annotations

from pipelines.cli.goodput import main

main()
