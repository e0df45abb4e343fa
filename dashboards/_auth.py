"""Optional sign-in: Streamlit's OIDC support (``st.login`` / ``st.user``), switched by config.

``[dashboard] auth = "oidc"`` in goodput.toml gates every page: the entry point calls
:func:`gate` before ``st.navigation``, so a visitor who is not signed in sees only the sign-in
prompt (no page runs, no query reaches the serving copy). The identity provider is configured in
``.streamlit/secrets.toml`` under ``[auth]`` (``redirect_uri``, ``cookie_secret``,
``client_id``, ``client_secret``, ``server_metadata_url``; see README "Sign-in"), never in the
repository. ``auth = "none"`` (the default) leaves the app open, for a laptop or a deployment
behind an authenticating proxy.
"""

from __future__ import annotations

import streamlit as st

from pipelines.config import load_config

__all__ = ["gate"]


def _auth_configured() -> bool:
    try:
        return "auth" in st.secrets
    except FileNotFoundError:  # no secrets.toml at all
        return False


def gate(*, sidebar: bool = False) -> None:
    """Stop the run unless sign-in is off or the visitor is signed in.

    Not signed in: a title, a one-line explanation and a log-in button (``st.login``), then
    ``st.stop()``; a missing ``[auth]`` section is shown as an error rather than raised from
    ``st.login``. Signed in, with ``sidebar`` (the entry point, once per run): the sidebar shows
    the user's name (or e-mail) and a log-out button.
    """
    if load_config().dashboard_auth != "oidc":
        return
    if not st.user.get("is_logged_in", False):
        st.title("goodput")
        st.info("Sign in to see the GPU fleet dashboards.")
        if _auth_configured():
            st.button("Log in", on_click=st.login, key="auth_login", type="primary")
        else:
            st.error(
                'Sign-in is on ([dashboard] auth = "oidc") but .streamlit/secrets.toml has no '
                "[auth] section: see README, Sign-in."
            )
        st.stop()
    if not sidebar:
        return
    who = st.user.get("name") or st.user.get("email") or "signed in"
    with st.sidebar:
        st.caption(f"Signed in as {who}")
        st.button("Log out", on_click=st.logout, key="auth_logout")
