"""``scontrol show topology`` output: the real 22.05 output of the test cluster's tree, the
block form as the 23.11+ block plugin prints it, and bad lines."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.kinds import IngestOptions, input_kind
from pipelines.slurm._scontrol_topology import parse_scontrol_topology
from pipelines.slurm._topology_conf import parse_topology_conf

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm_topology"
DAY = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)


def _domains(rows: pl.DataFrame) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for level, domain, node in rows.select("level", "domain", "node").iter_rows():
        out.setdefault((level, domain), []).append(node)
    return out


def test_real_22_05_output_gives_two_leaves_under_one_spine() -> None:
    """Slurm 22.05.8's output for leaf1 = gpu-001,gpu-002, leaf2 = gpu-003,gpu-004 and a spine
    listing both leaves and all 4 nodes: 2 + 2 leaf rows (switch-1) + 4 spine rows (switch-2)
    = 8 rows; Slurm's Level=0/1 is our switch-1/switch-2."""
    res = parse_scontrol_topology(
        FIXTURES / "scontrol_show_topology_22.05.txt", cluster="testgpu", valid_from=DAY
    )
    assert res.rejected.height == 0
    assert res.info["form"] == "tree"
    assert res.info["domains"] == 3
    assert _domains(res.rows) == {
        ("switch-1", "leaf1"): ["gpu-001", "gpu-002"],
        ("switch-1", "leaf2"): ["gpu-003", "gpu-004"],
        ("switch-2", "spine"): ["gpu-001", "gpu-002", "gpu-003", "gpu-004"],
    }
    assert res.rows["line_no"].to_list() == [1, 1, 2, 2, 3, 3, 3, 3]
    assert res.rows["valid_from"].unique().to_list() == [DAY]


def test_output_and_its_topology_conf_give_the_same_map() -> None:
    """The topology.conf the test cluster runs with and slurmctld's output of it: equal
    (level, domain, node) rows."""
    conf = (
        "SwitchName=leaf1 Nodes=gpu-001,gpu-002\n"
        "SwitchName=leaf2 Nodes=gpu-003,gpu-004\n"
        "SwitchName=spine Switches=leaf1,leaf2\n"
    )
    a = parse_topology_conf("topology.conf", cluster="c", text=conf, valid_from=DAY).rows
    b = parse_scontrol_topology(
        FIXTURES / "scontrol_show_topology_22.05.txt", cluster="c", valid_from=DAY
    ).rows
    cols = ["level", "domain", "node"]
    assert a.select(cols).sort(cols).equals(b.select(cols).sort(cols))


def test_block_lines_give_block_domains() -> None:
    """Two blocks as the block plugin prints them (``BlockName=%s BlockIndex=%u Nodes=%s``,
    ``src/plugins/topology/block``): 4 + 4 rows at level block."""
    text = "BlockName=b1 BlockIndex=0 Nodes=node[1-4]\nBlockName=b2 BlockIndex=1 Nodes=node[5-8]\n"
    res = parse_scontrol_topology("t.txt", cluster="c", text=text, valid_from=DAY)
    assert res.rejected.height == 0
    assert res.info["form"] == "block"
    assert {k: len(v) for k, v in _domains(res.rows).items()} == {
        ("block", "b1"): 4, ("block", "b2"): 4,
    }  # fmt: skip


def test_bad_lines_are_rejected_with_line_and_field() -> None:
    """An unknown key (line 2), a bad host list (line 3) and a child switch that is not listed
    (line 4) are rejected; leaf1 (line 1) loads: 2 rows."""
    text = (
        "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=gpu-[001-002] \n"
        "SwitchName=x Level=0 Colour=red Nodes=gpu-009\n"
        "SwitchName=y Level=0 LinkSpeed=1 Nodes=gpu-[003-\n"
        "SwitchName=spine Level=1 LinkSpeed=1 Switches=leaf1,leaf9\n"
    )
    res = parse_scontrol_topology("t.txt", cluster="c", text=text, valid_from=DAY)
    assert _domains(res.rows) == {("switch-1", "leaf1"): ["gpu-001", "gpu-002"]}
    bad = {r["line_no"]: (r["field"], r["reason"]) for r in res.rejected.iter_rows(named=True)}
    assert set(bad) == {2, 3, 4}
    assert bad[2] == (None, "unknown field 'Colour'")
    assert bad[3][0] == "Nodes"
    assert bad[4] == ("Switches", "unknown switch 'leaf9'")


def test_no_topology_plugin_is_an_empty_map() -> None:
    """``No topology information available`` (topology/none): no rows, nothing rejected."""
    res = parse_scontrol_topology(
        "t.txt", cluster="c", text="No topology information available\n", valid_from=DAY
    )
    assert (res.rows.height, res.rejected.height, res.info["form"]) == (0, 0, None)


def test_empty_output_is_an_error() -> None:
    """An empty file is no topology output: the error names the file."""
    with pytest.raises(InputFormatError, match=r"t\.txt"):
        parse_scontrol_topology("t.txt", text="\n", valid_from=DAY)


def test_the_topology_kind_reads_txt_files_as_scontrol_output(tmp_path: Path) -> None:
    """``topology_2026-12-03.txt`` goes through the ``topology`` kind's parser: 8 rows dated
    by the name's day."""
    path = tmp_path / "topology_2026-12-03.txt"
    path.write_text((FIXTURES / "scontrol_show_topology_22.05.txt").read_text())
    kind = input_kind("topology")
    assert any(path.match(g) for g in kind.globs)
    parse = kind.source_of(path).parse
    assert parse is not None
    res = parse(path, IngestOptions(cluster="testgpu"))
    assert res.rows.height == 8
    assert res.rows["valid_from"].unique().to_list() == [DAY]
