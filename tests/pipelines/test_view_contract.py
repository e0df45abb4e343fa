"""Snapshot of every published view's columns and types: a change to the contract is deliberate.

To change the contract on purpose, update ``view_contract.json`` (run this file with
``GOODPUT_UPDATE_SNAPSHOT=1``) and ``sql/README.md`` in the same commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import VIEWS
from tests.conftest import Materialized

SNAPSHOT = Path(__file__).with_name("view_contract.json")
pytestmark = pytest.mark.slow


def _contract(db: Path) -> dict[str, list[list[str]]]:
    with duckdb.connect(str(db), read_only=True) as con:
        out = {}
        for view in VIEWS:
            rows = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_schema = 'main' and table_name = ? order by ordinal_position",
                [view],
            ).fetchall()
            out[view] = [[c, t] for c, t in rows]
    return out


def test_views_match_the_snapshot(materialized: Materialized) -> None:
    """Columns, order and types of each view equal the committed snapshot."""
    got = _contract(materialized.cfg.serving_path)
    if os.environ.get("GOODPUT_UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert got == expected
