"""A process started with "spawn" after an ``AppTest`` run does not run the page again.

Streamlit's script runner leaves the page it ran installed as ``sys.modules["__main__"]``, and
``multiprocessing``'s "spawn" start runs the parent's ``__main__`` file in the child before its
target. Without ``tests/conftest.py::_keep_main_module`` the second test's child ran the first
test's page, bare; this app's pages exit 1 that way, so Dagster's multiprocess executor
(``tests/scale/test_delta_lake.py``) failed whenever its pytest-xdist worker had run a dashboard
test last. The two tests run in this order, in one worker (``--dist loadfile``).
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

#: Where the page notes each run of it (a module constant: the second test reads it).
MARKER: dict[str, Path] = {}


def test_a_page_run_by_apptest(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A page that writes a marker file each time it runs: AppTest runs it once."""
    marker = tmp_path_factory.mktemp("page") / "ran"
    MARKER["path"] = marker
    page = (
        "import pathlib\nimport streamlit as st\n"
        f"pathlib.Path({str(marker)!r}).write_text('ran')\nst.write('hello')\n"
    )
    at = AppTest.from_string(page, default_timeout=30)
    at.run()
    assert [m.value for m in at.markdown] == ["hello"]
    assert marker.read_text() == "ran"


def test_a_spawned_process_after_it_does_not_run_the_page() -> None:
    """A spawned child exits 0 without running the page (its marker is not written again)."""
    marker = MARKER.get("path")
    if marker is not None:
        marker.unlink()
    child = multiprocessing.get_context("spawn").Process(target=sys.getrecursionlimit)
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert marker is None or not marker.exists()
