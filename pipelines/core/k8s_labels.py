"""Reading one Kubernetes label (Node or Pod ``metadata.labels``) from a row's ``labels`` JSON.

The parsers store a Kubernetes object's labels as one JSON object per row (``labels``, String;
NULL where it has none). Label keys (``[prefix/]name``: letters, digits, ``-``, ``_``, ``.``
and one ``/``) never hold a double quote, so a key is read with the bracket path ``$["key"]``.
"""

from __future__ import annotations

import polars as pl

__all__ = ["k8s_label"]


def k8s_label(key: str, column: str = "labels") -> pl.Expr:
    """The value of label ``key`` (String) from the JSON object in ``column``; NULL when the
    label is absent or ``column`` is NULL. ``nvidia.com/gpu.replicas`` → ``"4"``."""
    return pl.col(column).str.json_path_match(f'$["{key}"]')
