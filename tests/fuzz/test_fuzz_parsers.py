"""A seeded mutation fuzzer over the real fixtures of every input kind (issue 14).

Each generated input is a real fixture with a few mutations (a byte flipped, a line dropped,
repeated or cut short, a value replaced by a hostile one: ``1e400``, ``NaN``, ``-1``, ``1e11``,
a lone surrogate escape, deep nesting, a huge integer). For every input the kind's parser must:

- raise nothing but :class:`~pipelines._parse_result.InputFormatError` (a clean file error);
- load no impossible value: GPU counts and restart counts finite and in [0, 10^5] / [0, 10^6],
  event counts ≥ 0, every time in the plausible window (1990 … now + 1 day), an event's last
  time not before its first;
- keep its rejected rows' reasons non-empty.

``make test`` runs ``GOODPUT_FUZZ_N`` (default 40) inputs per kind, seeded; ``make fuzz`` runs
4,000 per kind, 20,000 in all. A failing input is written under the test's temporary folder and
the seed is in the assertion message, so it can be replayed.
"""

from __future__ import annotations

import math
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.ingest import IngestOptions, parse_file
from tests.conftest import FIXTURES

N = int(os.environ.get("GOODPUT_FUZZ_N", "40"))
SEED = int(os.environ.get("GOODPUT_FUZZ_SEED", "20261202"))

#: (kind, fixture, file name the parser is given)
CORPUS = [
    ("sacct", FIXTURES / "slurm-22.05-lab" / "sacct_all.psv", "sacct.psv"),
    ("sacct", FIXTURES / "slurm-22.05-lab" / "sacct_all.json", "sacct.json"),
    ("k8s-events", FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json", "events.json"),
    ("k8s-pods", FIXTURES / "k8s-pods" / "pods_sample.json", "pods.json"),
    ("dcgm", FIXTURES / "dcgm-exporter" / "issue_metrics_pastes.prom", "scrape.prom"),
    (
        "slurm-state",
        FIXTURES / "slurm-policy" / "live_transactions_withassoc.psv",
        "transactions_fuzz.txt",
    ),
    ("slurm-state", FIXTURES / "slurm-policy" / "live_tres.psv", "tres_fuzz.txt"),
    (
        "slurm-state",
        FIXTURES / "slurm-policy" / "live_scontrol_config_after.txt",
        "scontrol_config_fuzz.txt",
    ),
]

HOSTILE = [
    "1e400", "NaN", "-1", "100000000000", "-Infinity", "99999999999999999999999",
    '"\\ud800"', "[" * 300 + "]" * 300, "", "0", "3.5", '"x"', "null", "true",
    "9999-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "-9223372036854775809",
]  # fmt: skip


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four random mutations of ``data``."""
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and (buf := bytearray(b"\n".join(lines))):  # flip a byte (if one is left)
            i = rng.randrange(len(buf))
            buf[i] = rng.randrange(256)
            lines = bytes(buf).split(b"\n")
        elif op == 1 and len(lines) > 1:  # drop a line
            del lines[rng.randrange(len(lines))]
        elif op == 2 and lines:  # repeat a line
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
        elif op == 3 and lines:  # cut a line short
            i = rng.randrange(len(lines))
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif op == 4:  # replace a number with a hostile value
            text = b"\n".join(lines).decode("utf-8", "replace")
            spots = [i for i, ch in enumerate(text) if ch.isdigit()]
            if spots:
                i = rng.choice(spots)
                j = i
                while j < len(text) and (text[j].isdigit() or text[j] in ".-:TZ"):
                    j += 1
                text = text[:i] + rng.choice(HOSTILE) + text[j:]
            lines = text.encode("utf-8", "surrogatepass").split(b"\n")
        elif op == 5:  # blank lines
            lines.insert(rng.randrange(len(lines) + 1), b"")
        else:  # truncate the file
            flat = b"\n".join(lines)
            lines = flat[: rng.randrange(len(flat) + 1)].split(b"\n")
    return b"\n".join(lines)


def _check_values(kind: str, rows: pl.DataFrame, now: datetime) -> list[str]:
    """Impossible values in a parse result's rows (empty = none)."""
    bad: list[str] = []
    lo, hi = datetime(1990, 1, 1, tzinfo=UTC), now + timedelta(days=1, minutes=5)
    for name, dtype in rows.schema.items():
        col = rows[name]
        if isinstance(dtype, pl.Datetime):
            vals = col.drop_nulls()
            if vals.len() and (vals.min() < lo or vals.max() > hi):  # type: ignore[operator]
                bad.append(f"{name} outside 1990 … now + 1 day")
        elif name in ("gpus", "req_gpus") and dtype.is_numeric():
            for v in col.drop_nulls().to_list():
                if not (math.isfinite(v) and 0 <= v <= 1e5):
                    bad.append(f"{name} = {v}")
                    break
        elif name in ("restart_count", "count") and dtype.is_numeric():
            vals = col.drop_nulls()
            if vals.len() and (vals.min() < 0 or vals.max() > 10**6):  # type: ignore[operator]
                bad.append(f"{name} outside 0 … 10^6")
    if kind == "k8s-events" and rows.height:
        both = rows.filter(pl.col("first_seen").is_not_null() & pl.col("last_seen").is_not_null())
        if both.filter(pl.col("last_seen") < pl.col("first_seen")).height:
            bad.append("an event's last_seen precedes its first_seen")
    return bad


@pytest.mark.parametrize(("kind", "fixture", "name"), CORPUS, ids=[c[2] for c in CORPUS])
def test_mutated_real_inputs(kind: str, fixture: Path, name: str, tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}:{name}")
    original = fixture.read_bytes()
    failures: list[str] = []
    for i in range(N):
        data = _mutate(original, rng)
        path = tmp_path / name
        path.write_bytes(data)
        now = datetime.now(UTC)
        try:
            result = parse_file(kind, path, IngestOptions(cluster="fuzz", tz="UTC"))
        except InputFormatError:
            continue
        except Exception as exc:  # the finding: anything else escaping the parser
            keep = tmp_path / f"failing_{i}_{name}"
            keep.write_bytes(data)
            failures.append(f"input {i} ({keep}): {type(exc).__name__}: {exc}"[:300])
            continue
        bad = _check_values(kind, result.rows, now)
        if result.rejected.height and result.rejected["reason"].is_null().any():
            bad.append("a rejected row without a reason")
        if bad:
            keep = tmp_path / f"failing_{i}_{name}"
            keep.write_bytes(data)
            failures.append(f"input {i} ({keep}): {'; '.join(bad)}")
    assert not failures, f"seed {SEED}, {len(failures)} of {N} inputs:\n" + "\n".join(failures[:10])
