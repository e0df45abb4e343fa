"""Load SQL statements from the repository's ``sql/`` folder by name."""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["SQL_DIR", "load_sql"]

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


@cache
def load_sql(name: str) -> str:
    """The text of ``sql/<name>.sql``.

    Args:
        name: a path below ``sql/`` without the suffix, e.g. ``"raw/create_ingests"``.

    Raises:
        FileNotFoundError: no such statement file.
    """
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")
