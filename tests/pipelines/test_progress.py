"""Progress bars: drawn only on a terminal, so logs and pipes get plain lines."""

from __future__ import annotations

import io

import pytest

from pipelines._progress import progress_bar


def test_bar_is_off_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under pytest stderr is captured (not a TTY): the bar is disabled and prints nothing."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = progress_bar(3, "ingest sacct", unit="file")
    assert bar.disable
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert err.getvalue() == ""


def test_bar_can_be_forced_on() -> None:
    """``show=True`` draws it (what a terminal gets): total, label and unit are the given ones."""
    out = io.StringIO()
    bar = progress_bar(2, "materialize", unit="run", show=True)
    bar.fp = out
    bar.update(2)
    assert not bar.disable
    assert (bar.total, bar.desc, bar.unit, bar.n) == (2, "materialize", "run", 2)
    bar.close()
