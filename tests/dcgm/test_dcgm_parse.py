"""dcgm-exporter text parser: real pasted lines, formats, label normalisation, rejects, folders."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError
from pipelines.dcgm._dcgm_parse import (
    DCGM_SAMPLE_SCHEMA,
    FIELD_TYPES,
    OLD_METRIC_NAMES,
    parse_dcgm,
    parse_dcgm_dir,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dcgm-exporter"
PASTES = FIXTURES / "issue_metrics_pastes.prom"
README = FIXTURES / "README_metrics_examples.txt"
T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
UUID0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _row(rows: pl.DataFrame, line_no: int) -> dict[str, object]:
    return rows.filter(pl.col("line_no") == line_no).row(0, named=True)


def test_pastes_parse_every_sample_line() -> None:
    """All 23 real pasted sample lines parse, with the schema in order and nothing rejected."""
    res = parse_dcgm(PASTES, cluster="c1", scrape_time=T0)
    assert res.rows.schema == pl.Schema(DCGM_SAMPLE_SCHEMA)
    assert res.rows.height == 23
    assert res.rejected.height == 0
    assert res.rows["cluster"].unique().to_list() == ["c1"]
    assert res.rows["ts"].unique().to_list() == [T0]


def test_pastes_empty_pod_labels_and_exporter_pod_host() -> None:
    """Issue #58: empty pod labels become NULL and Hostname is flagged as the exporter pod."""
    row = _row(parse_dcgm(PASTES, scrape_time=T0).rows, 10)
    assert row["metric"] == "DCGM_FI_DEV_SM_CLOCK"
    assert row["value"] == 1335.0
    assert row["gpu_index"] == 4
    assert row["gpu_uuid"] == "GPU-58fae45b-e5a5-0c62-d478-8ff7c485e74e"
    assert row["device"] == "nvidia4"
    assert row["model_name"] == "NVIDIA TITAN V"
    assert row["host"] == "dcgm-exporter-lcxpl"
    assert row["host_is_exporter_pod"] is True
    assert (row["pod"], row["namespace"], row["container"]) == (None, None, None)


def test_pastes_old_lowercase_names_map_to_dcgm_fields() -> None:
    """Issue #188: dcgm-exporter 1.x names map to the DCGM_FI_* field names."""
    rows = parse_dcgm(PASTES, scrape_time=T0).rows.filter(pl.col("line_no").is_between(13, 19))
    assert rows["metric"].to_list() == [
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
    ]
    assert rows["value"].to_list() == [585.0, 5000.0, 54.0, 30.982, 55491669881.0, 0.0, 0.0]


def test_int64_energy_counter_above_int32_limit_is_kept() -> None:
    """The 55,491,669,881 mJ energy counter (> 2^31) is a real value, not a blank."""
    row = _row(parse_dcgm(PASTES, scrape_time=T0).rows, 17)
    assert row["metric"] == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    assert row["value"] == 55491669881.0


def test_pastes_mig_labels_and_old_label_names() -> None:
    """Issue #272: GPU_I_PROFILE/GPU_I_ID, lowercase uuid and pod_name/pod_namespace labels."""
    rows = parse_dcgm(PASTES, scrape_time=T0).rows
    mig = _row(rows, 22)
    assert mig["metric"] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    assert mig["gpu_uuid"] == "GPU-af2c63a8-8c8b-21cc-581a-bab6bba89d08"
    assert (mig["mig_profile"], mig["mig_instance"]) == ("4g.40gb", 1)
    assert mig["host"] is None
    assert mig["host_is_exporter_pod"] is False
    old = _row(rows, 23)
    assert (old["pod"], old["namespace"], old["container"]) == ("d85np-t6mdg", "ai-1", "-grpc-pod")
    assert old["value"] == 0.008246
    assert (old["mig_profile"], old["mig_instance"]) == (None, None)


def test_pastes_pod_attributed_profiling_metrics() -> None:
    """gpu-monitoring-tools #138: pod, namespace and container of the workload are kept."""
    row = _row(parse_dcgm(PASTES, scrape_time=T0).rows, 30)
    assert row["metric"] == "DCGM_FI_PROF_PCIE_TX_BYTES"
    assert row["value"] == 421894.0
    assert (row["pod"], row["namespace"], row["container"]) == (
        "dcgmproftester",
        "default",
        "dcgmproftester11",
    )


def test_readme_sentinel_becomes_null() -> None:
    """README: MEMORY_TEMP 9223372036854775794 (DCGM int64 blank) is NULL; clocks are kept."""
    res = parse_dcgm(README, scrape_time=T0)
    first = res.rows.filter(pl.col("line_no").is_between(11, 13))
    assert first["metric"].to_list() == [
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
    ]
    assert first["value"].to_list() == [139.0, 405.0, None]
    assert first["gpu_uuid"].unique().to_list() == [UUID0]
    assert res.rows.height == 9
    assert res.info["blank_values"] == 3


def test_readme_shell_lines_are_rejected_with_line_numbers() -> None:
    """README snippet lines that are shell commands or '...' go to rejected, by line number."""
    rej = parse_dcgm(README, scrape_time=T0).rejected
    assert rej.schema == pl.Schema(REJECTED_SCHEMA)
    assert rej.height == 22
    dots = rej.filter(pl.col("line_no") == 10).row(0, named=True)
    assert (dots["raw"], dots["field"], dots["line_end"]) == ("...", "line", 10)
    curl = rej.filter(pl.col("line_no") == 3).row(0, named=True)
    assert (curl["field"], curl["reason"]) == ("value", "value is not a number")


def test_declared_types_cover_the_exporter_field_lists() -> None:
    """Every field in both exporter CSVs (commented ones too) has a declared type."""
    fields: set[str] = set()
    for name in ("default-counters.csv", "dcp-metrics-included.csv"):
        for line in (FIXTURES / name).read_text().splitlines():
            text = line.lstrip("# ").strip()
            parts = [p.strip() for p in text.split(",")]
            if len(parts) >= 3 and parts[0].startswith("DCGM_") and parts[1] != "label":
                fields.add(parts[0])
    assert len(fields) > 40
    assert fields - set(FIELD_TYPES) == set()


def test_old_names_cover_the_compatibility_list() -> None:
    """Every 1.x name is mapped (dcgm_fi_* by upper-casing, the rest by the table)."""
    names = set()
    for line in (FIXTURES / "1.x-compatibility-metrics.csv").read_text().splitlines():
        head = line.lstrip("# ").split(",")[0].strip()
        if head.startswith("dcgm_") and "," in line:
            names.add(head)
    assert names - set(OLD_METRIC_NAMES) == {n for n in names if n.startswith("dcgm_fi_")}
    assert all(v.startswith("DCGM_FI_") for v in OLD_METRIC_NAMES.values())


def test_blank_sentinels_judged_by_field_type(tmp_path: Path) -> None:
    """int32 blanks NULL a temperature, not an int64 counter; fp64 blank NULLs power; NaN is
    rejected ("non-finite value"), not NULLed."""
    p = _write(
        tmp_path,
        "s.prom",
        'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 2147483632\n'
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"} 2147483632\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 140737488355328\n'
        'DCGM_FI_PROF_PCIE_TX_BYTES{gpu="0"} 140737488355328\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} NaN\n'
        'DCGM_FI_DEV_FB_USED{gpu="0"} 2147483631\n',
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert res.rows["value"].to_list() == [
        None,
        2147483632.0,
        None,
        140737488355328.0,
        2147483631.0,
    ]
    assert (res.info["blank_values"], res.info["nan_values"]) == (2, 0)
    assert res.rejected.select("line_no", "field", "reason").rows() == [
        (5, "value", "non-finite value")
    ]


def test_prometheus_timestamps_are_milliseconds(tmp_path: Path) -> None:
    """Prometheus text: 1793620800123 ms → 2026-11-02 12:00:00.123 UTC; untimed take scrape_time."""
    p = _write(
        tmp_path,
        "m.prom",
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 87 1793620800123\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b"} 12\n',
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert res.info["format"] == "prometheus"
    assert res.rows["ts"].to_list() == [datetime(2026, 11, 2, 12, 0, 0, 123000, tzinfo=UTC), T0]


def test_prometheus_seconds_timestamp_is_rejected(tmp_path: Path) -> None:
    """A seconds value in a Prometheus file (lands in 1970 as ms) is rejected, not mis-dated."""
    p = _write(tmp_path, "m.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 87 1793620800\n')
    res = parse_dcgm(p, scrape_time=T0)
    assert res.rows.height == 0
    assert res.rejected.row(0, named=True)["field"] == "timestamp"
    assert "seconds where milliseconds" in res.rejected.row(0, named=True)["reason"]


def test_openmetrics_timestamps_are_seconds(tmp_path: Path) -> None:
    """OpenMetrics (ends with # EOF): fractional seconds are exact to the microsecond."""
    p = _write(
        tmp_path,
        "m.om",
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 87 1793620800.123456\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 88 1793620830\n'
        "# EOF\n",
    )
    res = parse_dcgm(p)
    assert res.info["format"] == "openmetrics"
    assert res.rows["ts"].to_list() == [
        datetime(2026, 11, 2, 12, 0, 0, 123456, tzinfo=UTC),
        datetime(2026, 11, 2, 12, 0, 30, tzinfo=UTC),
    ]
    assert res.rows["value"].to_list() == [87.0, 88.0]


def test_openmetrics_counter_suffixes(tmp_path: Path) -> None:
    """OpenMetrics '_total' is dropped from a DCGM counter; '_created' samples are only counted."""
    p = _write(
        tmp_path,
        "c.om",
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total{gpu="0"} 55491669881 1793620800\n'
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_created{gpu="0"} 1793000000 1793620800\n'
        'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu="0"} 7 1793620800\n'
        "# EOF\n",
    )
    res = parse_dcgm(p)
    assert res.rows.select("metric", "value").rows() == [
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 55491669881.0),
        ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 7.0),
    ]
    assert res.info["non_dcgm_samples"] == {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_created": 1}


def test_openmetrics_content_after_eof_is_rejected(tmp_path: Path) -> None:
    """A sample after '# EOF' is rejected with its line number."""
    p = _write(
        tmp_path,
        "m.om",
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 1793620800\n'
        "# EOF\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 2 1793620830\n',
    )
    res = parse_dcgm(p)
    assert res.rows["value"].to_list() == [1.0]
    assert res.rejected.select("line_no", "reason").row(0) == (3, "content after '# EOF'")


def test_exported_labels_replace_the_exporter_pod(tmp_path: Path) -> None:
    """With exported_* labels (honorLabels: false) the plain pod/namespace are the exporter's."""
    p = _write(
        tmp_path,
        "e.prom",
        'DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-x",Hostname="dcgm-exporter-9xk2p",'
        'kubernetes_node="gpu-node-07",pod="dcgm-exporter-9xk2p",namespace="gpu-operator",'
        'container="nvidia-dcgm-exporter",exported_pod="train-0",exported_namespace="team-a",'
        'exported_container="pytorch"} 97 1793620800000\n',
    )
    row = parse_dcgm(p).rows.row(0, named=True)
    assert (row["pod"], row["namespace"], row["container"]) == ("train-0", "team-a", "pytorch")
    assert row["host"] == "gpu-node-07"
    assert row["host_is_exporter_pod"] is False


def test_target_labels_of_the_exporter_are_no_workload(tmp_path: Path) -> None:
    """kube-prometheus scraping gpu-operator's exporter (a public CNCF AI-conformance evidence
    page's /api/v1/query answer, 2026-03-10, as /federate text): the busy GPU carries its
    workload as exported_*; the idle GPU only the target's own pod, namespace and container,
    which name the exporter: no workload (before: a job ``gpu-operator/nvidia-dcgm-exporter-…``
    held the idle GPU). A series whose container is the exporter's (``dcgm-exporter``, the
    Helm chart's) is the target's too, whatever its pod."""
    common = (
        'DCGM_FI_DRIVER_VERSION="580.105.08",Hostname="gpu-node-1",endpoint="gpu-metrics",'
        'instance="10.0.172.246:9400",job="nvidia-dcgm-exporter",'
        'modelName="NVIDIA H100 80GB HBM3",namespace="gpu-operator",'
        'pod="nvidia-dcgm-exporter-wqqqn",service="nvidia-dcgm-exporter"'
    )
    p = _write(
        tmp_path,
        "federate_20260310T034129Z.prom",
        f'DCGM_FI_DEV_GPU_UTIL{{{common},UUID="GPU-c4529c8d",container="nvidia-dcgm-exporter",'
        'device="nvidia0",exported_container="main",exported_namespace="dynamo-workload",'
        'exported_pod="vllm-agg-0-vllmdecodeworker-s65j5",gpu="0"} 0 1773114089184\n'
        f'DCGM_FI_DEV_GPU_UTIL{{{common},UUID="GPU-bc5610b9",container="nvidia-dcgm-exporter",'
        'device="nvidia1",gpu="1"} 0 1773114089184\n'
        'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-92da0328",gpu="0",Hostname="gpu-node-2",'
        'namespace="team-a",pod="train-0",container="dcgm-exporter"} 0 1773114089184\n'
        'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-5d1e",gpu="1",Hostname="gpu-node-2",'
        'namespace="team-a",pod="my-dcgm-exporter-tests",container="main"} 9 1773114089184\n',
    )
    got = parse_dcgm(p).rows.select("host", "pod", "namespace", "container").rows()
    assert got == [
        ("gpu-node-1", "vllm-agg-0-vllmdecodeworker-s65j5", "dynamo-workload", "main"),
        ("gpu-node-1", None, None, None),
        ("gpu-node-2", None, None, None),
        # a workload named like the exporter: Kubernetes' generated suffixes have no vowel
        ("gpu-node-2", "my-dcgm-exporter-tests", "team-a", "main"),
    ]


def test_hostname_lowercase_and_hpc_job_and_escapes(tmp_path: Path) -> None:
    """Lowercase 'hostname' and hpc_job are read; escaped quotes and '}' in values parse."""
    p = _write(
        tmp_path,
        "h.prom",
        'DCGM_FI_DEV_GPU_UTIL{gpu="0", hostname="dgx-01", hpc_job="4242",'
        r'modelName="A \"quoted\" } name"}  55   1793620800000' + "\n",
    )
    row = parse_dcgm(p).rows.row(0, named=True)
    assert (row["host"], row["hpc_job"], row["value"]) == ("dgx-01", "4242", 55.0)
    assert row["model_name"] == 'A "quoted" } name'


def test_bad_lines_rejected_with_line_numbers(tmp_path: Path) -> None:
    """Missing value, bad number, broken labels and a bad gpu label are rejected; the rest parse."""
    p = _write(
        tmp_path,
        "b.prom",
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="1"}\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="2"} ten\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID=GPU-x} 30\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="four"} 40\n'
        "\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="5"} 50\n',
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert res.rows.select("line_no", "gpu_index", "value").rows() == [(2, 0, 10.0), (8, 5, 50.0)]
    assert res.rejected.select("line_no", "field").rows() == [
        (3, "line"),
        (4, "value"),
        (5, "labels"),
        (6, "gpu"),
    ]
    assert res.rejected["raw"][1] == 'DCGM_FI_DEV_GPU_UTIL{gpu="2"} ten'


def test_untimed_sample_without_any_time_is_rejected(tmp_path: Path) -> None:
    """No timestamp, no scrape_time, no time in the file name: the sample is rejected, with why."""
    p = _write(tmp_path, "scrape.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10\n')
    res = parse_dcgm(p)
    assert res.rows.height == 0
    assert res.rejected.row(0, named=True)["field"] == "timestamp"
    assert "no timestamp" in res.rejected.row(0, named=True)["reason"]


def test_gzip_detected_by_magic_bytes(tmp_path: Path) -> None:
    """A gzipped scrape is read whatever its name; the file-name time dates untimed samples."""
    p = tmp_path / "dcgm-20261102T120500Z.prom"
    p.write_bytes(gzip.compress(b'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10\n'))
    res = parse_dcgm(p)
    assert res.info["gzip"] is True
    assert res.rows["ts"].to_list() == [datetime(2026, 11, 2, 12, 5, tzinfo=UTC)]


def test_non_dcgm_metrics_are_counted_not_kept(tmp_path: Path) -> None:
    """Samples of other exporters' metrics are left out and counted by name in info."""
    p = _write(
        tmp_path,
        "x.prom",
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10\ngo_goroutines 12\ngo_goroutines 13\n',
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert res.rows["metric"].to_list() == ["DCGM_FI_DEV_GPU_UTIL"]
    assert res.info["non_dcgm_samples"] == {"go_goroutines": 2}


def test_wrong_kind_of_file_raises(tmp_path: Path) -> None:
    """A JSON document is not a scrape: InputFormatError naming the file."""
    p = _write(tmp_path, "events.json", '{\n  "kind": "EventList",\n  "items": []\n}\n')
    with pytest.raises(InputFormatError, match=r"events\.json"):
        parse_dcgm(p, scrape_time=T0)


def test_scrape_of_another_exporter_raises(tmp_path: Path) -> None:
    """A node-exporter scrape (samples, none of them DCGM) raises InputFormatError."""
    p = _write(tmp_path, "node.prom", "node_load1 0.5\nnode_load5 0.4\n")
    with pytest.raises(InputFormatError, match="no DCGM metric"):
        parse_dcgm(p, scrape_time=T0)


def test_snapshot_folder_takes_times_from_file_names(tmp_path: Path) -> None:
    """A folder of snapshots: each file's name dates its samples; other files are skipped."""
    line = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="n1"} {v}\n'
    _write(tmp_path, "dcgm-20261102T120000Z.prom", line.replace("{v}", "10"))
    _write(tmp_path, "dcgm-20261102T120030Z.prom", line.replace("{v}", "20"))
    (tmp_path / "n2").mkdir()
    (tmp_path / "n2" / "dcgm-20261102T120000Z.prom.gz").write_bytes(
        gzip.compress(line.replace("n1", "n2").replace("{v}", "30").encode())
    )
    _write(tmp_path, "README.md", "not a scrape\n")
    res = parse_dcgm_dir(tmp_path, cluster="c1")
    got = res.rows.sort("host", "ts").select("host", "ts", "value", "line_no").rows()
    assert got == [
        ("n1", datetime(2026, 11, 2, 12, 0, tzinfo=UTC), 10.0, 1),
        ("n1", datetime(2026, 11, 2, 12, 0, 30, tzinfo=UTC), 20.0, 1),
        ("n2", datetime(2026, 11, 2, 12, 0, tzinfo=UTC), 30.0, 1),
    ]
    assert res.info["files"] == 3
    assert res.info["skipped_files"] == [str(tmp_path / "README.md")]


def test_snapshot_folder_bad_line_names_its_file(tmp_path: Path) -> None:
    """A bad line in one snapshot is rejected with that file and line; the others still parse."""
    _write(tmp_path, "dcgm-20261102T120000Z.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1\n')
    bad = _write(
        tmp_path, "dcgm-20261102T120030Z.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 2\nDCGM_FI_X{\n'
    )
    res = parse_dcgm_dir(tmp_path)
    assert res.rows.height == 2
    assert res.rejected.select("file", "line_no").rows() == [(str(bad), 2)]


def test_naive_scrape_time_is_refused(tmp_path: Path) -> None:
    """A scrape_time without a zone raises ValueError (UTC everywhere)."""
    p = _write(tmp_path, "m.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10\n')
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_dcgm(p, scrape_time=datetime(2026, 11, 2, 12, 0))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(model=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30))
def test_escaped_label_values_round_trip(tmp_path: Path, model: str) -> None:
    """Any label value written with the text format's escapes reads back unchanged."""
    escaped = model.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    p = _write(tmp_path, "r.prom", f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",modelName="{escaped}"}} 1\n')
    row = parse_dcgm(p, scrape_time=T0).rows.row(0, named=True)
    assert row["model_name"] == (model or None)


_GOOD = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 5'


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)))
def test_every_line_is_accounted_for(tmp_path: Path, junk: list[str]) -> None:
    """Every non-blank, non-comment line is a row, a rejected row or a counted non-DCGM sample."""
    lines = [_GOOD, *junk]
    p = _write(tmp_path, "f.prom", "\n".join(lines) + "\n")
    res = parse_dcgm(p, scrape_time=T0)
    counted = [s for s in lines if s.strip() and not s.strip().startswith("#")]
    non_dcgm = res.info["non_dcgm_samples"]
    assert isinstance(non_dcgm, dict)
    assert res.rows.height + res.rejected.height + sum(non_dcgm.values()) == len(counted)
    assert res.rows["line_no"][0] == 1
