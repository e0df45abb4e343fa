"""Optional sign-in (``[dashboard] auth``): off, pages render; on, a visitor who is not signed in
sees the sign-in prompt and no data on every page, even a page file run without the entry point;
signed in, pages render with the user's name and a log-out button."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, Materialized

pytestmark = pytest.mark.slow

APP = str(REPO / "dashboards" / "app.py")
PAGES = (
    "overview",
    "waste",
    "fairness",
    "time_to_start",
    "queue",
    "topology",
    "jobs",
    "recommendations",
    "reports",
    "sql_query",
)
#: A syntactically complete [auth] section; nothing here reaches a provider.
AUTH_SECRETS = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "test-only-cookie-secret",
    "client_id": "goodput-test",
    "client_secret": "test-only",
    "server_metadata_url": "https://idp.invalid/.well-known/openid-configuration",
}


@pytest.fixture
def serving(materialized: Materialized, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(materialized.cfg.serving_path)
    monkeypatch.setenv("GOODPUT_SERVING_DB", path)
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    return path


@pytest.fixture
def oidc(
    serving: str, materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The fixture fleet's config with ``[dashboard] auth = "oidc"``."""
    cfg = tmp_path / "goodput.toml"
    text = materialized.cfg.path.read_text(encoding="utf-8")
    cfg.write_text(text + '\n[dashboard]\nauth = "oidc"\n', encoding="utf-8")
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    return cfg


def _app(user: dict[str, object] | None = None, script: str = APP) -> AppTest:
    at = AppTest.from_file(script, default_timeout=60)
    at.secrets["auth"] = AUTH_SECRETS
    if user is not None:
        at.user = user
    return at


def _shows_data(at: AppTest) -> bool:
    return bool(at.metric or at.dataframe or at.get("plotly_chart") or at.get("download_button"))


def test_auth_off_pages_render(serving: str) -> None:
    """The default (``auth = "none"``): no prompt, the overview shows its numbers."""
    at = _app()
    at.run()
    assert not at.exception
    assert len(at.metric) == 4
    assert "auth_login" not in _keys(at)
    assert "auth_logout" not in _keys(at)


def _keys(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key}


def test_auth_on_unauthenticated_sees_only_the_prompt(oidc: Path) -> None:
    """Entry point and every page: the sign-in prompt, a log-in button, no data element."""
    at = _app({"is_logged_in": False})
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["goodput"]
    assert at.info[0].value == "Sign in to see the GPU fleet dashboards."
    assert "auth_login" in _keys(at)
    assert not _shows_data(at)
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, page
        assert not _shows_data(at), page
        assert "auth_login" in _keys(at), page


@pytest.mark.parametrize("page", PAGES)
def test_auth_on_page_file_run_alone_is_gated(oidc: Path, page: str) -> None:
    """A page file run without the entry point (Streamlit's pages-folder mode) shows no data."""
    at = _app({"is_logged_in": False}, str(REPO / "dashboards" / "pages" / f"{page}.py"))
    at.run()
    assert not at.exception
    assert not _shows_data(at)
    assert "auth_login" in _keys(at)


def test_auth_on_signed_in_user_sees_pages_name_and_logout(oidc: Path) -> None:
    """Signed in as Ada: the overview renders, the sidebar names her and offers log-out."""
    at = _app({"is_logged_in": True, "name": "Ada Lovelace", "email": "ada@example.org"})
    at.run()
    assert not at.exception
    assert len(at.metric) == 4
    assert "Signed in as Ada Lovelace" in [c.value for c in at.sidebar.caption]
    assert "auth_logout" in _keys(at)
    assert "auth_login" not in _keys(at)


def test_auth_on_without_auth_secrets_says_so(oidc: Path) -> None:
    """Sign-in on but no ``[auth]`` secrets: an error explains it, no data, no exception."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = {"is_logged_in": False}
    at.run()
    assert not at.exception
    assert at.error and "[auth]" in at.error[0].value
    assert not _shows_data(at)
