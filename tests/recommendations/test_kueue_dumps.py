"""The Kueue dumps the recommendations read (``clusterqueues*.json``, ``localqueues*.json``):
the newest file's objects, and a file that is not a dump named in the error (it was a bare
``JSONDecodeError`` or ``TypeError`` without the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines._parse_result import InputFormatError
from pipelines.recommendations import _kueue_objects

_CQ = '{"kind": "ClusterQueue", "metadata": {"name": "cq-a"}}'


def test_the_newest_dump_gives_its_objects_in_any_of_kubectls_shapes(tmp_path: Path) -> None:
    """A List's items (with a byte-order mark), one object, or an array; the newest file by
    name wins, and no file is no objects."""
    assert _kueue_objects(tmp_path, "clusterqueues") == []
    (tmp_path / "clusterqueues_2026-11-01.json").write_text(f"[{_CQ}]", encoding="utf-8")
    assert [o["metadata"]["name"] for o in _kueue_objects(tmp_path, "clusterqueues")] == ["cq-a"]
    (tmp_path / "clusterqueues_2026-11-02.json").write_text(
        '\ufeff{"kind": "List", "items": [' + _CQ + ", 7]}", encoding="utf-8"
    )
    assert [o["kind"] for o in _kueue_objects(tmp_path, "clusterqueues")] == ["ClusterQueue"]
    (tmp_path / "clusterqueues_2026-11-03.json").write_text(_CQ, encoding="utf-8")
    assert len(_kueue_objects(tmp_path, "clusterqueues")) == 1


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"localqueues_x\.json: not a kubectl JSON dump"),
        ('{"items": [', r"localqueues_x\.json: not a kubectl JSON dump"),
        ('{"items": null}', r"localqueues_x\.json: 'items' is not a list of objects: None"),
    ],
)
def test_a_file_that_is_not_a_dump_is_named(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "localqueues_x.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError, match=match):
        _kueue_objects(tmp_path, "localqueues")
