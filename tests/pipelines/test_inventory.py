"""The node inventory reader (``pipelines/inventory.py``) and what a build makes of its rows.

Hand-written files: every rejected row is named by line and field with its text and reason,
a file that is not an inventory is refused whole, and a host listed twice is counted once in a
cluster's capacity (before the reader, a host listed again, as an inventory written once per
partition lists a node that is in two, added its GPUs again to the cluster's capacity, and a
GPU count that was not a number stopped every build with polars' parse error).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines._parse_result import InputFormatError
from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.inventory import read_inventory, read_inventory_folder
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

_HEADER = "host,gpus,gpu_type,partition,rack"


def _write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)
    return path


def test_each_bad_row_is_rejected_with_its_line_field_and_reason(tmp_path: Path) -> None:
    """Good rows are kept in file order (blank lines skipped, blanks stripped, empty optional
    fields NULL); each bad row is rejected with its 1-based line (the header is line 1)."""
    f = _write(
        tmp_path / "c.csv",
        "\n".join(
            [
                _HEADER,  # 1
                "n1,8,H100,gpu,r1",  # 2 kept
                "n2,eight,H100,gpu,r1",  # 3 not a number
                "",  # 4 blank: skipped
                " n3 , 4 ,,,",  # 5 kept: stripped, NULL type/partition/rack
                "n1,4,H100,debug,r1",  # 6 n1 again
                ",8,H100,gpu,r1",  # 7 no host
                "n4,-8,H100,gpu,r2",  # 8 negative
                "n5,nan,H100,gpu,r2",  # 9 not finite
                "n6,,H100,gpu,r2",  # 10 no count
                "n7,8,H100,gpu,r2,extra",  # 11 a field too many
                "n8,0,,cpu,r3",  # 12 kept: a node without GPUs
            ]
        )
        + "\n",
    )
    read = read_inventory(f)
    assert read.rows.to_dicts() == [
        {"host": "n1", "gpus": 8.0, "gpu_type": "H100", "partition": "gpu", "rack": "r1"},
        {"host": "n3", "gpus": 4.0, "gpu_type": None, "partition": None, "rack": None},
        {"host": "n8", "gpus": 0.0, "gpu_type": None, "partition": "cpu", "rack": "r3"},
    ]
    not_a_count = "is not a whole number of GPUs from 0 to 1024"
    got = read.rejected.select("line_no", "line_end", "field", "raw", "reason").rows()
    assert got == [
        (3, 3, "gpus", "n2,eight,H100,gpu,r1", f"'eight' {not_a_count}"),
        (6, 6, "host", "n1,4,H100,debug,r1", "host 'n1' already listed on line 2"),
        (7, 7, "host", ",8,H100,gpu,r1", "no host name"),
        (8, 8, "gpus", "n4,-8,H100,gpu,r2", f"'-8' {not_a_count}"),
        (9, 9, "gpus", "n5,nan,H100,gpu,r2", f"'nan' {not_a_count}"),
        (10, 10, "gpus", "n6,,H100,gpu,r2", "no GPU count"),
        (11, 11, None, "n7,8,H100,gpu,r2,extra", "6 fields, the header names 5"),
    ]  # fmt: skip
    assert set(read.rejected["file"]) == {str(f)}
    assert read.info == {"rows": 3, "rejected": 7}


@pytest.mark.parametrize(
    ("gpus", "kept"),
    [("8", 8.0), ("8.0", 8.0), ("0", 0.0), ("1024", 1024.0), ("8.5", None), ("1e3", None),
     ("1_000", None), ("\uff18", None), ("1e308", None), ("1025", None), ("-0", None),
     ("inf", None), ("0x8", None), ("True", None)],
)  # fmt: skip
def test_a_gpu_count_is_a_whole_number_in_ascii_digits(
    tmp_path: Path, gpus: str, kept: float | None
) -> None:
    """Python's float() reads ``1e308`` (an infinite capacity once summed), ``1_000`` and
    full-width digits; a GPU count is none of those."""
    read = read_inventory(_write(tmp_path / "c.csv", f"host,gpus\nn1,{gpus}\n"))
    assert read.rows["gpus"].to_list() == ([] if kept is None else [kept])
    assert read.rejected["field"].to_list() == ([] if kept is not None else ["gpus"])


def test_each_line_is_one_record(tmp_path: Path) -> None:
    """A stray quote rejects its own line only (read as CSV, it swallowed every later host into
    one field, silently); a form feed inside a field stays in it (no extra line, later line
    numbers right); CRLF and CR line ends count as line ends; a quoted comma is one field."""
    f = tmp_path / "c.csv"
    f.write_bytes(
        b"host,gpus,gpu_type\r\n"
        b'n1,8,"H100\r\n'  # line 2: unbalanced quote
        b"n2,8,a\x0cb\r"  # line 3: a form feed inside a field, then a lone CR
        b'n3,8,"H100, SXM"\n'  # line 4
        b"n4,x,H100\n"  # line 5
    )
    read = read_inventory(f)
    assert read.rows.select("host", "gpu_type").rows() == [("n2", "a\x0cb"), ("n3", "H100, SXM")]
    got = read.rejected.select("line_no", "field", "raw").rows()
    assert got == [(2, None, 'n1,8,"H100'), (5, "gpus", "n4,x,H100")]
    assert read.rejected["reason"][0].startswith("not one CSV record")


def test_only_host_and_gpus_are_required_in_any_order_and_case(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark, header names in another case and order, and a column the
    inventory does not use (ignored)."""
    f = _write(tmp_path / "c.csv", "\ufeffGPUS,Host,cpus\n4,a,64\n8,b,64\n")
    rows = read_inventory(f).rows
    assert rows.select("host", "gpus").rows() == [("a", 4.0), ("b", 8.0)]
    assert rows.columns == ["host", "gpus", "gpu_type", "partition", "rack"]
    assert rows["rack"].null_count() == 2


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("host,gpu_type\nn1,H100\n", r"c\.csv:1 \(field gpus\): the header names no 'gpus'"),
        ("name,gpus\nn1,8\n", r"c\.csv:1 \(field host\): the header names no 'host'"),
        ("", r"c\.csv:1: empty"),
    ],
)
def test_a_file_that_is_not_an_inventory_is_refused(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(InputFormatError, match=match):
        read_inventory(_write(tmp_path / "c.csv", text))


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_bytes(b"host,gpus\n\xff\xfe,8\n")
    with pytest.raises(InputFormatError, match=r"c\.csv: not UTF-8 text"):
        read_inventory(f)


def test_the_folder_names_each_file_for_its_cluster(tmp_path: Path) -> None:
    _write(tmp_path / "b.csv", f"{_HEADER}\nb1,8,,,\nb1,8,,,\n")
    _write(tmp_path / "a.csv", f"{_HEADER}\na1,4,,,\n")
    nodes, rejected = read_inventory_folder(tmp_path)
    assert nodes.select("cluster", "host", "gpus", "capacity_source").rows() == [
        ("a", "a1", 4.0, "inventory"),
        ("b", "b1", 8.0, "inventory"),
    ]
    assert rejected.select("cluster", "line_no", "field").rows() == [("b", 3, "host")]
    _write(tmp_path / "z.csv", "name,gpus\nz1,8\n")  # not an inventory: refused when read
    with pytest.raises(InputFormatError, match=r"z\.csv:1 \(field host\)"):
        read_inventory_folder(tmp_path)
    only, _ = read_inventory_folder(tmp_path, clusters=["a", "y"])  # z.csv is not opened
    assert only["host"].to_list() == ["a1"]
    empty_nodes, empty_rejected = read_inventory_folder(tmp_path / "missing")
    assert (empty_nodes.height, empty_rejected.height) == (0, 0)
    assert empty_nodes.columns == nodes.columns


_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName\n"
    "910001|910001|slurm-z|gpu|normal|nlp|nlp|ivan|1009|2026-11-02T09:00:00|2026-11-02T09:00:00|"
    "2026-11-02T10:00:00|2026-11-02T12:00:00|02:00:00|0:0|COMPLETED|1|8|"
    "billing=8,cpu=8,gres/gpu=8,mem=1000M,node=1|"
    "billing=8,cpu=8,gres/gpu:a100=8,gres/gpu=8,mem=1000M,node=1|2-00:00:00|z-001|inv\n"
)


@pytest.mark.slow
def test_a_host_listed_twice_counts_once_in_the_capacity(fleet_dir: Path, tmp_path: Path) -> None:
    """slurm-z's inventory lists z-001 twice (8, then 4 GPUs) beside z-002 (8) and a row whose
    GPU count is not a number. The cluster's capacity (no TRES registration events: the
    inventory) is 8 + 8 = 16 GPUs, 57,600 GPU-seconds an hour (before: 8 + 4 + 8 = 20 GPUs,
    or no build at all with the bad row); the job's 8 GPUs over 10:00–12:00 are half of it at
    10:00 and 11:00. The two rejected rows are in ``rejected_rows`` (source ``inventory``, no
    ingest), and the build's data-quality findings count them by field. A
    file of an unknown cluster that is not an inventory stops nothing (it is not read)."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(fleet_dir / "registry.yaml", data / "registry.yaml")
    _write(
        data / "inventory" / "slurm-z.csv",
        f"{_HEADER}\nz-001,8,a100,gpu,z1\nz-001,4,a100,gpu,z1\nz-002,8,a100,gpu,z1\n"
        "z-003,eight,a100,gpu,z1\n",
    )
    # Not an inventory, but of a cluster that is neither configured nor in the data: not read.
    _write(data / "inventory" / "other.csv", "name,gpus\nx1,8\n")
    sacct = _write(data / "inputs" / "slurm-z" / "sacct" / "2026-11-02.txt", _SACCT)
    cfg = load_config(
        write_config(tmp_path, days_dir=data, clusters=(("slurm-z", "slurm", "UTC"),))
    )
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        loaded = ingest_file(con, "sacct", sacct, IngestOptions(cluster="slurm-z", tz="UTC"))
        assert (loaded.rows_loaded, loaded.rows_rejected) == (1, 0)
        rebuild(con, cfg, full=True)
        nodes = con.execute(
            "SELECT host, gpus FROM core.nodes WHERE cluster = 'slurm-z' ORDER BY host"
        ).fetchall()
        hours = con.execute(
            "SELECT hour, capacity_gpu_s, allocated_gpu_s FROM analytics.occupancy_hourly"
            " WHERE cluster = 'slurm-z' ORDER BY hour"
        ).fetchall()
        rejected = con.execute(
            "SELECT file, line_no, field, raw, reason, ingest_id FROM rejected_rows"
            " WHERE source = 'inventory' ORDER BY line_no"
        ).fetchall()
        findings = con.execute(
            "SELECT value, detail FROM analytics.data_quality"
            " WHERE cluster = 'slurm-z' AND \"check\" = 'rejected_rows' ORDER BY detail"
        ).fetchall()
    assert nodes == [("z-001", 8.0), ("z-002", 8.0)]
    assert {cap for _, cap, _ in hours} == {57_600.0}
    assert [(h.hour, a) for h, _, a in hours if a > 0] == [(10, 28_800.0), (11, 28_800.0)]
    assert rejected == [
        ("slurm-z.csv", 3, "host", "z-001,4,a100,gpu,z1", "host 'z-001' already listed on line 2",
         None),
        ("slurm-z.csv", 5, "gpus", "z-003,eight,a100,gpu,z1",
         "'eight' is not a whole number of GPUs from 0 to 1024", None),
    ]  # fmt: skip
    assert findings == [
        (1.0, "inventory slurm-z.csv: rows rejected (gpus), first line 5: "
              "'eight' is not a whole number of GPUs from 0 to 1024"),
        (1.0, "inventory slurm-z.csv: rows rejected (host), first line 3: "
              "host 'z-001' already listed on line 2"),
    ]  # fmt: skip
