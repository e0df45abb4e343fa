"""Shared fixtures: a small generated fleet, its configuration, and a materialized warehouse."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import _pytest.fixtures as _pytest_fixtures
import dagster as dg
import pytest

from pipelines.config import Config, load_config

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

#: XDMoD's sacct fields for its headerless shredder inputs (OpenXdmod/Shredder/Slurm.php).
XDMOD_FIELDS = (
    "jobid,jobidraw,cluster,partition,qos,account,group,gid,user,uid,submit,eligible,start,end,"
    "elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqtres,alloctres,timelimit,nodelist,jobname"
)
#: The Hábrók ``sacct.txt`` fields (hb-jobinfo's test README), ``☃``-delimited, no header.
HB_FIELDS = (
    "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,Timelimit,"
    "Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,AllocTRES,"
    "TRESUsageInMax,TRESUsageInTot,TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,MaxRSSNode,MaxRSSTask,"
    "MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,MaxDiskReadTask,MaxDiskWriteNode,MaxDiskWriteTask,"
    "Comment"
)


#: The bundled fleet's clusters: (name, scheduler, IANA zone).
FLEET_CLUSTERS = (("slurm-a", "slurm", "America/New_York"), ("k8s-b", "kubernetes", "UTC"))


def write_config(
    folder: Path,
    *,
    days_dir: Path | None = None,
    clusters: tuple[tuple[str, str, str], ...] = FLEET_CLUSTERS,
) -> Path:
    """A goodput.toml in ``folder`` with data paths in ``days_dir`` (a generated fleet) and the
    given clusters (the first is the default cluster)."""
    data = days_dir or folder
    text = f"""
default_cluster = "{clusters[0][0]}"
[warehouse]
path = "{folder / "warehouse.duckdb"}"
serving_path = "{folder / "serving.duckdb"}"
inputs = "{data / "inputs"}"
inventory = "{data / "inventory"}"
registry = "{data / "registry.yaml"}"
partitions_start = "2026-01-01"
"""
    for name, scheduler, zone in clusters:
        text += f'[[clusters]]\nname = "{name}"\nscheduler = "{scheduler}"\ntimezone = "{zone}"\n'
    path = folder / "goodput.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two days of the bundled sample fleet (seed 7), generated once per session."""
    from pipelines.sample_fleet import generate_sample_fleet

    out = tmp_path_factory.mktemp("fleet")
    generate_sample_fleet(out, seed=7, days=2, rackscale=False)
    return out


@dataclass(frozen=True)
class Materialized:
    """A warehouse built by real Dagster runs over the small fleet."""

    cfg: Config
    instance: dg.DagsterInstance


@pytest.fixture(scope="session")
def materialized(
    fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Materialized]:
    """Every partition of the small fleet materialized, then analytics and the serving copy."""
    from pipelines.cli.runner import materialize_all

    work = tmp_path_factory.mktemp("warehouse")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    with dg.instance_for_test() as instance:
        materialize_all(cfg, instance=instance, log=lambda _m: None)
        yield Materialized(cfg=cfg, instance=instance)


@pytest.fixture
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GOODPUT_CONFIG pointing at an empty data folder under ``tmp_path``."""
    path = write_config(tmp_path)
    monkeypatch.setenv("GOODPUT_CONFIG", str(path))
    monkeypatch.delenv("GOODPUT_DB", raising=False)
    return path


def pytest_configure(config: pytest.Config) -> None:
    """Keep Dagster from writing into the user's home or the repository during tests.

    ``make`` points ``DAGSTER_HOME`` at the repository (its ``dagster.yaml``) and the instance's
    storage at ``.dagster/``; each test process (each pytest-xdist worker too) gets storage of its
    own instead, so no test run sees, or frees as dead, another process's runs.
    """
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    storage = Path(tempfile.mkdtemp(prefix="goodput-test-dagster-"))
    os.environ["GOODPUT_DAGSTER_DIR"] = str(storage / "storage")
    os.environ["GOODPUT_DAGSTER_LOGS"] = str(storage / "logs")
    config.add_cleanup(lambda: shutil.rmtree(storage, ignore_errors=True))


@pytest.fixture(autouse=True)
def _keep_main_module() -> Iterator[None]:
    """Put ``sys.modules["__main__"]`` back after each test.

    Streamlit's script runner (``AppTest.run``) installs the page it runs as ``__main__`` and
    leaves it there. A process that ``multiprocessing`` later starts with "spawn" (Dagster's
    multiprocess executor) runs the parent's ``__main__`` file first, so it ran that page, bare,
    and died (exit code 1) before its step began: a test of the lake's fan-out failed or passed
    by which dashboard test its pytest-xdist worker had run last.
    """
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


#: A test file that starts a Slurm cluster: a function taking the session's ``slurm_cluster``, or
#: a module's own ``private_cluster``. They all run in one pytest-xdist worker: the session
#: cluster then starts once, and no two clusters start at once (``_free_ports`` lets a port go
#: before its daemon binds it, so two clusters starting together could pick the same one).
_STARTS_SLURM = re.compile(r"def \w+\([^)]*\bslurm_cluster\b|\bprivate_cluster\(")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under ``pytest -n N --dist loadfile`` (``make test``): each test file runs in one worker,
    so its module-scoped fixtures (warehouses, Slurm clusters) are built once, and the files
    that start a Slurm cluster (:data:`_STARTS_SLURM`) all run in the same worker.

    (pytest-xdist's own ``loadgroup`` marks do not reach the scheduler under pytest 9, whose node
    ids are no longer strings xdist can suffix; the controller only sees node ids, so the files
    are told apart by their text.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    groups: dict[str, str] = {}

    class _FileScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            if file not in groups:
                path = Path(config.rootpath) / file
                text = path.read_text(encoding="utf-8") if path.is_file() else ""
                groups[file] = "slurm" if _STARTS_SLURM.search(text) else file
            return groups[file]

    return _FileScheduling(config, log)


# --- disk: temporary folders of module-scoped fixtures ---------------------------------------
#
# pyproject.toml sets ``tmp_path_retention_policy = "failed"``, so a passing test's ``tmp_path``
# is removed when the test ends.  Folders a module- or class-scoped fixture made with
# ``tmp_path_factory.mktemp`` would still stay until the session ends: a whole run left 6.2 GB of
# warehouses behind, more than a CI machine's free disk.  These hooks note the folders each such
# fixture makes and remove them when the fixture is torn down, unless a test of its module failed
# (its folder is then kept for a look, as pytest keeps a failed test's ``tmp_path``).

_MADE_BY_FIXTURE: dict[tuple[str, str], list[Path]] = {}
_FAILED_MODULES: set[str] = set()


def _executing_fixture_request() -> pytest.FixtureRequest | None:
    """The request of the innermost fixture whose function is running (pytest's
    ``call_fixture_func`` frame nearest the caller), or None outside any fixture's set-up."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code is _CALL_FIXTURE_CODE:
            request = frame.f_locals.get("request")
            return request if isinstance(request, pytest.FixtureRequest) else None
        frame = frame.f_back
    return None


_CALL_FIXTURE_CODE = getattr(getattr(_pytest_fixtures, "call_fixture_func", None), "__code__", None)
_MKTEMP = pytest.TempPathFactory.mktemp


def _recording_mktemp(self: pytest.TempPathFactory, basename: str, numbered: bool = True) -> Path:
    """``TempPathFactory.mktemp``, noting the folder for the fixture whose set-up made it when
    that fixture is module- or class-scoped (a session fixture first requested inside a module
    fixture's set-up runs in its own ``call_fixture_func``, so its folder is not the module's)."""
    path = _MKTEMP(self, basename, numbered)
    request = _executing_fixture_request()
    if request is not None and request.scope in ("module", "class"):
        _MADE_BY_FIXTURE.setdefault(_fixture_key(request), []).append(path)
    return path


def _fixture_key(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A module- or class-scoped fixture's instance: its name and its scope's node id."""
    return request.fixturename or "", request.node.nodeid


pytest.TempPathFactory.mktemp = _recording_mktemp  # type: ignore[method-assign]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember the modules with a failed test (setup, call or teardown)."""
    if report.failed:
        _FAILED_MODULES.add(report.nodeid.split("::", 1)[0])


def pytest_fixture_post_finalizer(
    fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest
) -> None:
    """Remove the folders a module- or class-scoped fixture made, unless its module failed."""
    made = _MADE_BY_FIXTURE.pop((fixturedef.argname, request.node.nodeid), None)
    if not made:
        return
    if request.node.nodeid.split("::", 1)[0] in _FAILED_MODULES:
        return
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The free disk, shared memory and memory when the run ends, in its last lines: a CI run
    that failed on a full disk or too little memory then says so where its tail is read."""
    lines = []
    for label, path in (("tmp", tempfile.gettempdir()), ("shm", "/dev/shm"), ("repo", ".")):
        try:
            usage = shutil.disk_usage(path)
        except OSError:
            continue
        lines.append(
            f"{label} {path}: {usage.free / 2**30:.1f} of {usage.total / 2**30:.1f} GiB free"
        )
    try:
        meminfo = Path("/proc/meminfo").read_text(encoding="ascii").splitlines()
        available = next(
            int(line.split()[1]) for line in meminfo if line.startswith("MemAvailable")
        )
        lines.append(f"memory: {available / 2**20:.1f} GiB available")
    except (OSError, StopIteration, ValueError):
        pass
    terminalreporter.write_sep("-", "machine at the end of the run")
    for line in lines:
        terminalreporter.write_line(line)
