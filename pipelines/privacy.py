"""Pseudonymisation of user names for everything published (pages, report, patches, KPIs).

Real user names stay in the warehouse; published surfaces show ``user-1a2b3c`` pseudonyms unless
``GOODPUT_SHOW_USER_NAMES=1`` is set (the one documented opt-in, read at call time).
"""

from __future__ import annotations

import hashlib
import hmac
import os

__all__ = ["DEFAULT_SALT", "pseudonymise", "show_user_names"]

#: Salt of the user-name pseudonyms when ``GOODPUT_PSEUDONYM_SALT`` is not set.
DEFAULT_SALT = "goodput"


def show_user_names() -> bool:
    """True when ``GOODPUT_SHOW_USER_NAMES`` is ``1``/``true``/``yes`` (read at call time)."""
    return os.environ.get("GOODPUT_SHOW_USER_NAMES", "").strip().lower() in ("1", "true", "yes")


def pseudonymise(name: str | None, *, salt: str | None = None) -> str:
    """A stable pseudonym ``user-1a2b3c`` for a user name (HMAC-SHA256 with a salt).

    Args:
        name: the user name; ``None``/empty gives ``unknown``.
        salt: default ``$GOODPUT_PSEUDONYM_SALT``, else :data:`DEFAULT_SALT`. Set a private salt
            so that pseudonyms cannot be reversed by hashing a list of likely names.
    """
    if not name:
        return "unknown"
    key = salt if salt is not None else os.environ.get("GOODPUT_PSEUDONYM_SALT", DEFAULT_SALT)
    digest = hmac.new(key.encode("utf-8"), name.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"user-{digest[:6]}"
