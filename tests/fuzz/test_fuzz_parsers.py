"""A seeded mutation fuzzer over the real fixtures of every input kind (issue 14).

Each generated input is a real fixture with a few mutations (a byte flipped, a line dropped,
repeated or cut short, a run of up to 1,000 blank lines, an extra field or a line of empty
fields, a value replaced by a hostile one: ``1e400``, ``NaN``, ``-1``, ``1e11``,
a lone surrogate escape, deep nesting, a huge integer). For every input the kind's parser must:

- raise nothing but :class:`~pipelines._parse_result.InputFormatError` (a clean file error);
- load no impossible value: GPU counts and restart counts finite and in [0, 10^5] / [0, 10^6],
  event counts ≥ 0, every time in the plausible window (1990 … now + 1 day), an event's last
  time not before its first;
- keep its rejected rows' reasons non-empty;
- conserve its input: every data item is loaded or rejected, exactly once
  (:func:`_conservation`). What a data item is depends on the kind:

  * sacct text: a non-blank line that is not a header line (the first non-blank line when the
    parser found a header, and every line equal to it). The parser folds lines into records (a
    free-text field holding a newline joins the lines after it; ``line_no``..``line_end``) and
    may unfold a record into rows (a pending array ``A_[1-5]``: one row per task, all with the
    record's lines), so the check is by line: the lines of the distinct loaded records and of
    the rejected rows cover every data line once, and no two rejections share a line. Checked
    on the whole file, and for every 8th input also on the file read in 16 KiB blocks, as
    ``goodput ingest`` reads it (a block costs about 0.1 s, so not for every input).
  * sacct JSON: a job in ``jobs``; its steps fold into it (a step's row or rejection carries its
    job's index as ``line_no``), so every job index is loaded or rejected, no index is outside
    the list, and no rejection is repeated. By record (the parser's own ``json_records``: a job
    and each of its steps, or one rejection for a job that cannot be read, steps and all):
    rows + rejected = records, unless a pending array was expanded into one row per task.
  * Kubernetes JSON (a list document, an array, one object): an item of the list, counted
    here with :mod:`json`; for a stream of objects (JSON lines, or ``kubectl get -w``'s
    pretty-printed objects) the reader's own ``info["items"]``. A later version of the same
    uid folds an earlier one (``info["duplicates"]``): rows + rejected + duplicates = items,
    and no item index is both loaded and rejected.
  * DCGM exposition text: a sample line (non-blank, not a ``#`` comment), or a line that is not
    UTF-8 (rejected as such, even a comment: the parser cannot read it); samples of metrics
    that are not DCGM's are counted, not loaded (``info["non_dcgm_samples"]``): rows +
    rejected + non-DCGM samples = sample lines.

``make test`` runs ``GOODPUT_FUZZ_N`` (default 40) inputs per kind, seeded; ``make fuzz`` runs
4,000 per kind, 20,000 in all. A failing input is written under the test's temporary folder and
the seed is in the assertion message, so it can be replayed.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.exceptions import PanicException

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.ingest import IngestOptions, parse_file
from pipelines.slurm._sacct_json import json_records
from pipelines.slurm._sacct_parse import iter_parse_sacct
from tests.conftest import FIXTURES

N = int(os.environ.get("GOODPUT_FUZZ_N", "40"))
SEED = int(os.environ.get("GOODPUT_FUZZ_SEED", "20261202"))
#: Every this many sacct text inputs are also parsed in blocks.
BLOCKS_EVERY = 8

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
        op = rng.randrange(9)
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
        elif op == 7:  # a run of up to 1,000 blank lines, at the start half the time
            at = 0 if rng.random() < 0.5 else rng.randrange(len(lines) + 1)
            lines[at:at] = [rng.choice([b"", b" ", b"\t", b"\r"])] * rng.randint(1, 1000)
        elif op == 8 and lines:  # an extra field, or a line of empty fields
            i = rng.randrange(len(lines))
            sep = rng.choice([b"|", b",", b" "])
            if rng.random() < 0.5:
                lines[i] += sep + rng.choice([b"x", b"", b"1"])
            else:
                lines[i] = sep * rng.randint(1, 40)
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


#: A blank line as the parsers see it: Unicode white space only (Rust's ``\s``; Python's
#: ``str.isspace`` also takes the separators U+001C..U+001F, which are not blank there).
_BLANK = re.compile(r"[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*")


def _text(data: bytes) -> str:
    """The file's text as the parsers read it: UTF-8, else Latin-1, without a BOM."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.removeprefix("\ufeff")


def _sacct_text(data: bytes, result: ParseResult) -> list[str]:
    """Conservation of a sacct text file, by line (module docstring)."""
    lines = [line.removesuffix("\r") for line in _text(data).split("\n")]
    non_blank = [no for no, line in enumerate(lines, 1) if not _BLANK.fullmatch(line)]
    headers: set[int] = set()
    if result.info.get("header") and non_blank:
        header = lines[non_blank[0] - 1]
        headers = {no for no in non_blank if lines[no - 1] == header}
    data_lines = set(non_blank) - headers
    records = result.rows.select("line_no", "line_end").unique().rows()
    spans = records + result.rejected.select("line_no", "line_end").rows()
    seen: dict[int, int] = {}
    for first, last in spans:
        for no in range(first, (last or first) + 1):
            if no in data_lines:
                seen[no] = seen.get(no, 0) + 1
    bad = []
    if dropped := sorted(data_lines - set(seen)):
        bad.append(f"{len(dropped)} data lines neither loaded nor rejected (lines {dropped[:5]})")
    if twice := sorted(no for no, n in seen.items() if n > 1):
        bad.append(f"{len(twice)} data lines loaded or rejected twice (lines {twice[:5]})")
    return bad


def _in_blocks(path: Path) -> ParseResult:
    """A sacct text file parsed as ``goodput ingest`` reads it, in blocks (of 16 KiB here, so
    the 60 kB fixture makes four), the blocks' rows and rejections put together."""
    blocks = list(iter_parse_sacct(path, cluster="fuzz", tz="UTC", chunk_bytes=16384))
    return ParseResult(
        rows=pl.concat([b.rows for b in blocks]),
        rejected=pl.concat([b.rejected for b in blocks]),
        info={"header": blocks[0].info.get("header")},
    )


def _json_items(data: bytes, result: ParseResult) -> int:
    """The items of a Kubernetes JSON file (module docstring)."""
    if result.info.get("framing") == "jsonl":
        return int(result.info["items"])
    doc = json.loads(_text(data))
    if isinstance(doc, list):
        return len(doc)
    return len(doc["items"]) if "items" in doc else 1


def _dcgm_item(line: bytes) -> bool:
    """Whether a line of exposition text is a data item: a sample line, or a line that is not
    UTF-8 (rejected as such, whatever it holds: the parser cannot tell a comment in it)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return not _BLANK.fullmatch(text) and not text.lstrip().startswith("#")


_CONFIG_SKIPPED = re.compile(
    r"^(Configuration data as of .*|Slurmctld\(.*\) at .* is (UP|DOWN)|[^=]*:)$"
)


def _slurm_state_lines(name: str, data: bytes, result: ParseResult) -> list[str]:
    """Line-based Slurm state outputs: every data line is loaded (in one row or more: a
    transaction changing several keys is a row per key) or rejected, never both, and nothing
    else is. Data lines: ``sacctmgr -P`` output's non-blank lines after its header (the first
    non-blank line); ``scontrol show config``'s non-blank lines other than its ``as of`` line,
    section headers (``…:`` without ``=``) and the daemon status line."""
    lines = [ln.decode("utf-8", "replace").removesuffix("\r") for ln in data.split(b"\n")]
    if name.startswith("scontrol_config"):
        items = {
            i for i, ln in enumerate(lines, 1)
            if ln.strip() and not _CONFIG_SKIPPED.match(ln.strip())
        }  # fmt: skip
        # the 'as of' line is consumed, or rejected when its time cannot be read
        items |= set(result.rejected["line_no"].to_list()) & {
            i for i, ln in enumerate(lines, 1) if ln.strip().startswith("Configuration data as of")
        }
    else:
        head = next((i for i, ln in enumerate(lines, 1) if ln.strip()), None)
        items = {i for i, ln in enumerate(lines, 1) if ln.strip() and head is not None and i > head}
    loaded = set(result.rows["line_no"].to_list())
    rejected = set(result.rejected["line_no"].to_list())
    bad = []
    if missing := sorted(items - loaded - rejected):
        bad.append(
            f"{len(missing)} of {len(items)} lines neither loaded nor rejected {missing[:5]}"
        )
    if both := sorted(loaded & rejected):
        bad.append(f"lines both loaded and rejected: {both[:5]}")
    if outside := sorted((loaded | rejected) - items):
        bad.append(f"rows of lines that are not data: {outside[:5]}")
    return bad


def _conservation(kind: str, name: str, data: bytes, result: ParseResult) -> list[str]:
    """Data items in that are neither loaded nor rejected, or both (module docstring)."""
    rows, rejected = result.rows, result.rejected
    if kind == "sacct" and result.info.get("format") != "json":
        return _sacct_text(data, result)
    if kind == "sacct":
        doc = json.loads(_text(data))
        jobs = len(doc["jobs"])
        records, early = json_records(doc)
        out = rows.height + rejected.height
        if not result.info["array_rows_expanded"] and out != len(records) + len(early):
            return [f"{len(records) + len(early)} job and step records in, {out} out"]
        got = set(rows["line_no"]) | set(rejected["line_no"])
        bad = []
        if missing := sorted(set(range(1, jobs + 1)) - got):
            bad.append(f"{len(missing)} of {jobs} jobs neither loaded nor rejected {missing[:5]}")
        if outside := sorted(got - set(range(1, jobs + 1))):
            bad.append(f"rows of jobs that are not in the list: {outside[:5]}")
        if rejected.select("line_no", "raw", "reason").is_duplicated().any():
            bad.append("a rejection repeated")
        return bad
    if kind in ("k8s-events", "k8s-pods"):
        items = _json_items(data, result)
        dups = int(result.info["duplicates"])
        out = rows.height + rejected.height + dups
        bad = []
        if out != items:
            bad.append(
                f"{items} items in, {out} out ({rows.height} rows, {rejected.height} rejected, "
                f"{dups} duplicates)"
            )
        if both := set(rows["line_no"]) & set(rejected["line_no"]):
            bad.append(f"items both loaded and rejected: {sorted(both)[:5]}")
        return bad
    if kind == "slurm-state":
        return _slurm_state_lines(name, data, result)
    samples = sum(1 for line in data.split(b"\n") if _dcgm_item(line))
    skipped = sum(result.info.get("non_dcgm_samples", {}).values())
    out = rows.height + rejected.height + skipped
    return [] if out == samples else [
        f"{samples} sample lines in, {out} out ({rows.height} rows, {rejected.height} rejected, "
        f"{skipped} not DCGM)"
    ]  # fmt: skip


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
        except (Exception, PanicException) as exc:  # the finding: anything else escaping
            keep = tmp_path / f"failing_{i}_{name}"
            keep.write_bytes(data)
            failures.append(f"input {i} ({keep}): {type(exc).__name__}: {exc}"[:300])
            continue
        bad = _check_values(kind, result.rows, now)
        if result.rejected.height and result.rejected["reason"].is_null().any():
            bad.append("a rejected row without a reason")
        bad += _conservation(kind, name, data, result)
        if kind == "sacct" and result.info.get("format") != "json" and i % BLOCKS_EVERY == 0:
            try:
                bad += [f"in blocks: {b}" for b in _sacct_text(data, _in_blocks(path))]
            except (Exception, PanicException) as exc:  # the whole file parsed: so must blocks
                bad.append(f"in blocks: {type(exc).__name__}: {exc}")
        if bad:
            keep = tmp_path / f"failing_{i}_{name}"
            keep.write_bytes(data)
            failures.append(f"input {i} ({keep}): {'; '.join(bad)}")
    assert not failures, f"seed {SEED}, {len(failures)} of {N} inputs:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize("blank", [b"\n", b" \n", b"\r\n"], ids=["empty", "space", "crlf"])
def test_a_line_after_a_run_of_blank_lines_is_loaded(blank: bytes, tmp_path: Path) -> None:
    """A headerless sacct log that opens with blank lines: the layout is found from the first
    non-blank line however far down it is, so the data line is loaded, not counted as blank
    (it was dropped silently after 800 blank lines, the end of the sampled window). Whole and
    in blocks; the block reader also past its first read (1 MiB of blank lines)."""
    from pipelines.slurm._sacct_parse import iter_parse_sacct

    line = b"10|10|COMPLETED|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=2\n"
    fields = ("JobID", "JobIDRaw", "State", "Start", "End", "AllocTRES")
    for n in (800, 801, 2**20 // len(blank) + 10):
        path = tmp_path / "sacct.psv"
        path.write_bytes(blank * n + line)
        whole = parse_file("sacct", path, IngestOptions(cluster="c", tz="UTC", fields=fields))
        assert (whole.rows.height, whole.rejected.height) == (1, 0), n
        assert whole.rows["line_no"].to_list() == [n + 1]
        assert whole.info["blank_lines"] == n
        blocks = list(iter_parse_sacct(path, fields=fields, chunk_bytes=4096))
        assert [r["line_no"] for b in blocks for r in b.rows.iter_rows(named=True)] == [n + 1]
        assert sum(b.info["blank_lines"] for b in blocks) == n


def test_reasons_of_rejected_rows_do_not_panic(tmp_path: Path) -> None:
    """Input 1,977 of ``make fuzz`` (the lab fixture with an End of ``2026-11-30T02:38:"\\ud800"``
    and a Submit cut short, cut down to 51 lines): formatting the two rejection reasons made
    polars panic (``PanicException``, not an ``Exception``, so it escaped ``goodput ingest``).
    Both rows are rejected, naming the field, and every other line loads."""
    src = Path(__file__).with_name("sacct_polars_panic.psv")
    path = tmp_path / "sacct.psv"
    path.write_bytes(src.read_bytes())
    result = parse_file("sacct", path, IngestOptions(cluster="fuzz", tz="UTC"))
    assert result.rejected["reason"].to_list() == [
        "unparseable End time '2026-11-30T02:38:\"\\ud800\"'",
        "unparseable Submit time '2026-11-30T02:4'",
    ]
    assert result.rows.height == 49
    assert _conservation("sacct", "sacct.psv", src.read_bytes(), result) == []
