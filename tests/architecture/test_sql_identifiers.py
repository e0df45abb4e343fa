"""Only ``pipelines/warehouse/`` formats identifiers into SQL (issue 13): elsewhere a statement is
a ``sql/`` file run by name, or a call to a table helper of :mod:`pipelines.warehouse.tables`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Known exceptions, each with its reason (to be moved behind ``pipelines.warehouse``).
_NOT_YET = {
    # The serving copy's pseudonym rewrite (names every user-name column of every table).
    "pipelines/privacy.py",
}
_STATEMENT = re.compile(r"\s*(CREATE|INSERT|DELETE|SELECT|DROP|UPDATE|ALTER|WITH)\b", re.I)


def _formatted_statements(path: Path) -> list[int]:
    """Lines of f-strings in ``path`` that start like a SQL statement and format a value in."""
    tree = ast.parse(path.read_text(), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.FormattedValue) for v in node.values
        ):
            first = node.values[0]
            if isinstance(first, ast.Constant) and _STATEMENT.match(str(first.value)):
                lines.append(node.lineno)
    return lines


def test_no_f_string_sql_outside_the_warehouse() -> None:
    """No module of ``pipelines/`` (but the warehouse and the listed exceptions) or
    ``dashboards/`` builds a statement with an f-string."""
    found = {
        str(p.relative_to(ROOT)): lines
        for top in ("pipelines", "dashboards")
        for p in sorted((ROOT / top).rglob("*.py"))
        if "warehouse" not in p.relative_to(ROOT).parts[:2]
        and str(p.relative_to(ROOT)) not in _NOT_YET
        and (lines := _formatted_statements(p))
    }
    assert found == {}
