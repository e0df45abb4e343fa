"""Slurm ``topology.conf``: the tree and block forms of the manual page, and hand-made files
with continuations, comments and bad lines."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.slurm._topology_conf import parse_topology_conf, valid_from_of
from pipelines.slurm._topology_yaml import parse_topology_yaml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm_topology"
DAY = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)


def _sizes(rows: pl.DataFrame) -> dict[tuple[str, str], int]:
    counts = rows.group_by("level", "domain").len()
    return {(lv, d): n for lv, d, n in counts.iter_rows()}


def test_tree_example_gives_leaf_switches_and_the_switch_above_them() -> None:
    """The man page's tree: s0–s2 hold dev[0-5], dev[6-11], dev[12-17] (level switch-1), s3
    above them holds all 18 (switch-2): 6 + 6 + 6 + 18 = 36 rows, none rejected."""
    res = parse_topology_conf(FIXTURES / "topology_tree.conf", cluster="c", valid_from=DAY)
    assert res.rejected.height == 0
    assert res.info["form"] == "tree"
    assert _sizes(res.rows) == {
        ("switch-1", "s0"): 6, ("switch-1", "s1"): 6, ("switch-1", "s2"): 6,
        ("switch-2", "s3"): 18,
    }  # fmt: skip
    s1 = res.rows.filter(pl.col("domain") == "s1")
    assert s1["node"].to_list() == [f"dev{i}" for i in range(6, 12)]
    assert s1["line_no"].unique().to_list() == [6]
    assert res.rows["valid_from"].unique().to_list() == [DAY]
    assert res.rows["cluster"].unique().to_list() == ["c"]


def test_redundant_spines_are_one_domain_not_rejected_nodes() -> None:
    """The Topology Guide's tree with four spines s4–s7 over the same leaves s0–s3 (4 nodes
    each): the spines are one switch-2 domain reached over four links. s4 (the first) holds
    all 16 nodes; s5–s7 get no rows and none of their 3 × 16 = 48 node entries is rejected
    (before: 48 rejected rows "node 'tuxN' is already in 's4' at this level"). Rows: 4 × 4
    leaf rows + 16 = 32; domains 8 − 3 = 5."""
    res = parse_topology_conf(
        FIXTURES / "topology_tree_redundant.conf", cluster="c", valid_from=DAY
    )
    assert res.rejected.height == 0
    assert _sizes(res.rows) == {
        ("switch-1", "s0"): 4, ("switch-1", "s1"): 4, ("switch-1", "s2"): 4,
        ("switch-1", "s3"): 4, ("switch-2", "s4"): 16,
    }  # fmt: skip
    assert res.info["redundant_switches"] == ["s5", "s6", "s7"]
    assert res.info["domains"] == 5


def test_redundant_spines_in_topology_yaml_are_listed_as_in_the_conf() -> None:
    """The same Guide tree written as a topology.yaml tree (hand-made here; the Guide gives it as
    topology.conf only): four spines s4–s7 over leaves s0–s3 of 4 nodes each. As for the conf,
    32 rows, none rejected, and the load's info names the redundant parents s5–s7, under the
    topology's name (before: the YAML reader dropped them, so the info had no such key)."""
    leaves = "".join(
        f"      - switch: s{i}\n        nodes: tux[{4 * i}-{4 * i + 3}]\n" for i in range(4)
    )
    spines = "".join(f"      - switch: s{i}\n        children: s[0-3]\n" for i in range(4, 8))
    text = f"- topology: guide\n  cluster_default: true\n  tree:\n    switches:\n{leaves}{spines}"
    res = parse_topology_yaml("t.yaml", cluster="c", valid_from=DAY, text=text)
    assert res.rejected.height == 0
    assert res.rows.height == 32
    assert _sizes(res.rows)[("switch-2", "s4")] == 16
    assert res.info["redundant_switches"] == {"guide": ["s5", "s6", "s7"]}
    plain = parse_topology_yaml(FIXTURES / "topology.yaml", cluster="c", valid_from=DAY)
    assert "redundant_switches" not in plain.info


def test_a_second_parent_over_other_switches_still_rejects_its_placed_nodes() -> None:
    """Two spines over overlapping but different leaves are not redundant: s3 over s0 and
    s1, s4 over s1 and s2. s4's nodes of s1 (n3, n4) are already in s3 at switch-2: rejected
    as before (2 rows), its n5, n6 kept."""
    text = (
        "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=s2 Nodes=n[5-6]\n"
        "SwitchName=s3 Switches=s[0-1]\nSwitchName=s4 Switches=s[1-2]\n"
    )
    res = parse_topology_conf("t.conf", cluster="c", valid_from=DAY, text=text)
    assert res.rejected.height == 2
    assert sorted(res.rejected["raw"].to_list()) == ["s4: n3", "s4: n4"]
    assert _sizes(res.rows)[("switch-2", "s4")] == 2
    assert "redundant_switches" not in res.info


def test_ring_and_torus_topologies_are_refused_by_name() -> None:
    """Slurm 26.05's ring (``RingName=`` in topology.conf, ``ring:`` in topology.yaml) and
    ``torus3d:`` forms are not read: each line or entry is rejected saying so, where the conf
    said "unknown parameter 'RingName'" and the YAML "needs exactly one of tree, block, flat:
    []"."""
    conf = parse_topology_conf(
        "t.conf", cluster="c", valid_from=DAY,
        text="RingName=ring0 Nodes=node[01-08]\nRingName=ring1 Nodes=node[09-16]\n",
    )  # fmt: skip
    assert (
        conf.rejected["reason"].to_list()
        == [
            "a ring (RingName, topology/ring) is not read: only the tree (SwitchName) and block"
            " (BlockName) forms are"
        ]
        * 2
    )
    yaml_text = (
        "- topology: topo-torus\n  cluster_default: true\n  torus3d:\n    toruses:\n"
        "      - name: pod1\n        nodes: node[01-32]\n"
    )
    res = parse_topology_yaml("t.yaml", cluster="c", valid_from=DAY, text=yaml_text)
    assert res.rejected["reason"].to_list() == [
        "needs exactly one of tree, block, flat; it names torus3d"
        " (ring and torus3d topologies are not read)"
    ]


def test_block_example_gives_four_blocks_and_keeps_block_sizes() -> None:
    """The man page's block form: four blocks of 32 nodes (node[1-32] … node[97-128]) and
    ``BlockSizes=30,120`` in ``info``."""
    res = parse_topology_conf(FIXTURES / "topology_block.conf", cluster="c", valid_from=DAY)
    assert res.rejected.height == 0
    assert res.info["form"] == "block"
    assert res.info["block_sizes"] == [30, 120]
    assert _sizes(res.rows) == {("block", f"block{i}"): 32 for i in range(1, 5)}
    b4 = res.rows.filter(pl.col("domain") == "block4")["node"]
    assert (b4.first(), b4.last()) == ("node97", "node128")


def test_continuation_lines_comments_and_case_are_read() -> None:
    """A host list continued after a comma, a parameter on a continued line, a trailing
    comment and lower-case names: leaf1 = gpu01–gpu03, leaf2 = gpu04–gpu05, spine over both
    (switch-2, 5 nodes); leaf1's rows carry its first line."""
    text = (
        "# hand-made\n"
        "SwitchName=leaf1 Nodes=gpu[01-02],\\\n"
        "   gpu03   # continued\n"
        "switchname=leaf2 \\\n"
        "  nodes=gpu[04-05] LinkSpeed=100\n"
        "\n"
        "SwitchName=spine Switches=leaf[1-2]\n"
    )
    res = parse_topology_conf("t.conf", cluster="c", text=text, valid_from=DAY)
    assert res.rejected.height == 0
    assert _sizes(res.rows) == {
        ("switch-1", "leaf1"): 3, ("switch-1", "leaf2"): 2, ("switch-2", "spine"): 5,
    }  # fmt: skip
    leaf1 = res.rows.filter(pl.col("domain") == "leaf1")
    assert leaf1["node"].to_list() == ["gpu01", "gpu02", "gpu03"]
    assert leaf1["line_no"].unique().to_list() == [2]


def test_bad_lines_are_rejected_naming_line_and_field() -> None:
    """Each bad line is one rejected row with its line (and last line when continued) and
    field; the good lines still load (b1: n1–n2, b2: n3)."""
    text = (
        "BlockName=b1 Nodes=n[1-2]\n"  # 1
        "BlockName=b2 Nodes=n3 Colour=red\n"  # 2: unknown parameter
        "BlockName=b3 Nodes=n[5-4]\n"  # 3: bad host list
        "BlockName=b4 Nodes=n[7-8] \\\n"  # 4-5: stray word on the continued line
        "  oops\n"
        "SwitchName=s0 Nodes=n9\n"  # 6: the other form
        "BlockSizes=4,x\n"  # 7: not a list of counts
        "BlockName=b5 Nodes=n2\n"  # 8: n2 already in b1
        "BlockName=b2 Nodes=n3\n"  # 9
    )
    res = parse_topology_conf("t.conf", cluster="c", text=text, valid_from=DAY)
    got = res.rejected.sort("line_no").select("line_no", "line_end", "field").rows()
    assert got == [
        (2, 2, "Colour"), (3, 3, "Nodes"), (4, 5, None), (6, 6, "SwitchName"),
        (7, 7, "BlockSizes"), (8, 8, "Nodes"),
    ]  # fmt: skip
    reasons = dict(res.rejected.select("line_no", "reason").rows())
    assert "unknown parameter 'Colour'" in reasons[2]
    assert "already in 'b1'" in reasons[8]
    assert _sizes(res.rows) == {("block", "b1"): 2, ("block", "b2"): 1}


def test_a_switch_over_an_unknown_switch_is_rejected() -> None:
    """``Switches=s[0-1]`` with no s1: the top switch is rejected (field Switches); s0 loads."""
    text = "SwitchName=s0 Nodes=a[1-2]\nSwitchName=top Switches=s[0-1]\n"
    res = parse_topology_conf("t.conf", cluster="c", text=text, valid_from=DAY)
    assert res.rejected.select("line_no", "field").rows() == [(2, "Switches")]
    assert _sizes(res.rows) == {("switch-1", "s0"): 2}


def test_a_file_without_switches_or_blocks_is_refused() -> None:
    """Only comments and blank lines: not a topology.conf."""
    with pytest.raises(InputFormatError, match="no SwitchName or BlockName"):
        parse_topology_conf("t.conf", text="# nothing\n\n", valid_from=DAY)


def test_valid_from_is_the_day_in_the_file_name(tmp_path: Path) -> None:
    """``topology_2026-11-02.conf`` took effect at 2026-11-02 00:00 UTC."""
    path = tmp_path / "topology_2026-11-02.conf"
    path.write_text("BlockName=b Nodes=n1\n", encoding="utf-8")
    assert valid_from_of(path) == DAY
    res = parse_topology_conf(path, cluster="c")
    assert res.rows["valid_from"].to_list() == [DAY]


def test_topology_yaml_example_gives_default_tree_and_named_block_levels() -> None:
    """The topology.yaml(5) example: topo1 (cluster default, tree) gives s1 = node01–02 and
    s2 = node03–04 (switch-1, lines 8 and 10) and sw_root over both (switch-2); topo2's four
    blocks of 4 are level ``topo2/block``; topo3 is flat (no rows): 2 + 2 + 4 + 16 = 24 rows."""
    res = parse_topology_yaml(FIXTURES / "topology.yaml", cluster="c", valid_from=DAY)
    assert res.rejected.height == 0
    assert res.info["default"] == "topo1"
    assert res.info["topologies"] == {"topo1": "tree", "topo2": "block", "topo3": "flat"}
    assert res.info["block_sizes"] == {"topo2": [4, 16]}
    assert _sizes(res.rows) == {
        ("switch-1", "s1"): 2, ("switch-1", "s2"): 2, ("switch-2", "sw_root"): 4,
        **{("topo2/block", f"b{i}"): 4 for i in range(1, 5)},
    }  # fmt: skip
    lines = dict(res.rows.select("domain", "line_no").unique().rows())
    assert (lines["s1"], lines["s2"], lines["b1"]) == (8, 10, 19)


def test_topology_yaml_bad_entries_are_rejected_naming_line_and_field() -> None:
    """A switch with a bad host list (its entry starts at line 7), a block without a name
    (line 12) and a topology with two forms (line 15) are rejected; s0 and b1 load."""
    text = (
        "- topology: t\n"  # 1
        "  cluster_default: true\n"
        "  tree:\n"
        "    switches:\n"
        "      - switch: s0\n"  # 5
        "        nodes: n[1-2]\n"
        "      - switch: s1\n"  # 7
        "        nodes: n[3-1]\n"
        "- topology: u\n"  # 9
        "  block:\n"
        "    blocks:\n"
        "      - nodes: m[1-2]\n"  # 12
        "      - block: b1\n"  # 13
        "        nodes: m[3-4]\n"
        "- topology: v\n"  # 15
        "  flat: true\n"
        "  tree: {switches: []}\n"
    )
    res = parse_topology_yaml("t.yaml", cluster="c", text=text, valid_from=DAY)
    assert sorted(res.rejected.select("line_no", "field").rows()) == [
        (7, "nodes"), (12, "block"), (15, "topology"),
    ]  # fmt: skip
    assert _sizes(res.rows) == {("switch-1", "s0"): 2, ("u/block", "b1"): 2}


def test_a_yaml_file_that_is_no_topology_list_is_refused() -> None:
    """A mapping at the top, not a list of ``- topology:`` items."""
    with pytest.raises(InputFormatError, match=r"not a topology\.yaml"):
        parse_topology_yaml("t.yaml", text="switches: []\n", valid_from=DAY)


def test_topology_yaml_entries_named_twice_or_not_a_mapping_are_rejected() -> None:
    """Switch s0 named again at line 7 and block b1 again at line 14 are rejected ("named
    twice", field switch / block); a bare string among the blocks has no line of its own and
    takes its block mapping's (line 11, its first key), "a block without a name"; the first
    s0 and b1 load."""
    text = (
        "- topology: t\n"  # 1
        "  cluster_default: true\n"
        "  tree:\n"
        "    switches:\n"
        "      - switch: s0\n"  # 5
        "        nodes: n[1-2]\n"
        "      - switch: s0\n"  # 7
        "        nodes: n[3-4]\n"
        "- topology: u\n"  # 9
        "  block:\n"  # 10
        "    blocks:\n"
        "      - block: b1\n"  # 12
        "        nodes: m[1-2]\n"
        "      - block: b1\n"  # 14
        "        nodes: m[3-4]\n"
        "      - just-a-string\n"
    )
    res = parse_topology_yaml("t.yaml", cluster="c", text=text, valid_from=DAY)
    assert sorted(res.rejected.select("line_no", "field", "reason").rows()) == [
        (7, "switch", "'s0' is named twice"),
        (11, "block", "a block without a name"),
        (14, "block", "'b1' is named twice"),
    ]
    assert _sizes(res.rows) == {("switch-1", "s0"): 2, ("u/block", "b1"): 2}
