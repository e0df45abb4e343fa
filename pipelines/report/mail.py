"""Mail a weekly report over SMTP (stdlib ``smtplib`` + ``email.message``).

Settings come from the environment at send time, never at import:
``GOODPUT_SMTP_HOST`` (required), ``GOODPUT_SMTP_PORT`` (default 587 with STARTTLS, else 25),
``GOODPUT_SMTP_USER`` and ``GOODPUT_SMTP_PASSWORD`` (login when both are set),
``GOODPUT_SMTP_FROM`` (required), ``GOODPUT_SMTP_STARTTLS`` (``1``/``true``/``yes``).
"""

from __future__ import annotations

import json
import os
import smtplib
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from pipelines.report.weekly import ReportPaths

__all__ = ["MailError", "SmtpSettings", "build_message", "send_report"]

_TRUE = ("1", "true", "yes", "on")


class MailError(RuntimeError):
    """The report cannot be mailed: settings missing, nothing to attach, or SMTP refused it."""


@dataclass(frozen=True)
class SmtpSettings:
    """Where and how to send.

    Attributes:
        host: SMTP server.
        sender: the From address.
        port: server port.
        user: login name (with ``password``; no login when either is missing).
        password: login password.
        starttls: upgrade the connection with STARTTLS before logging in.
        timeout_s: socket timeout.
    """

    host: str
    sender: str
    port: int = 25
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SmtpSettings:
        """Read ``GOODPUT_SMTP_*`` (from ``env``, default ``os.environ``).

        Raises:
            MailError: ``GOODPUT_SMTP_HOST`` or ``GOODPUT_SMTP_FROM`` is missing, or the port is
                not a number.
        """
        e = os.environ if env is None else env
        host, sender = e.get("GOODPUT_SMTP_HOST", ""), e.get("GOODPUT_SMTP_FROM", "")
        if not host or not sender:
            raise MailError("set GOODPUT_SMTP_HOST and GOODPUT_SMTP_FROM to mail reports")
        starttls = e.get("GOODPUT_SMTP_STARTTLS", "").strip().lower() in _TRUE
        port_text = e.get("GOODPUT_SMTP_PORT") or ("587" if starttls else "25")
        try:
            port = int(port_text)
        except ValueError as exc:
            raise MailError(f"GOODPUT_SMTP_PORT={port_text!r} is not a port number") from exc
        return cls(
            host=host,
            sender=sender,
            port=port,
            user=e.get("GOODPUT_SMTP_USER") or None,
            password=e.get("GOODPUT_SMTP_PASSWORD") or None,
            starttls=starttls,
        )


def _summary(paths: ReportPaths) -> list[str]:
    try:
        data = json.loads(paths.json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    sentences = data.get("narrative") if isinstance(data, dict) else None
    return [str(s) for s in sentences] if isinstance(sentences, list) else []


def build_message(
    paths: ReportPaths,
    to: Sequence[str],
    *,
    sender: str,
    subject: str | None = None,
    attach_html: bool = False,
) -> EmailMessage:
    """The mail: the report's narrative as text, the PDF (and optionally the HTML) attached.

    Raises:
        MailError: no recipient, or no PDF to attach.
    """
    if not to:
        raise MailError("no recipient")
    if paths.pdf is None or not paths.pdf.exists():
        raise MailError(f"{paths.folder}: no PDF to attach (print it first)")
    msg = EmailMessage()
    msg["Subject"] = subject or f"GPU fleet weekly report {paths.week}"
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    body = [f"GPU fleet weekly report {paths.week}", "", *_summary(paths), "",
            "The full report is attached (PDF)."]  # fmt: skip
    msg.set_content("\n".join(body) + "\n")
    msg.add_attachment(paths.pdf.read_bytes(), maintype="application", subtype="pdf",
                       filename=f"goodput-report-{paths.week}.pdf")  # fmt: skip
    if attach_html:
        msg.add_attachment(paths.html.read_text(encoding="utf-8"), subtype="html",
                           filename=f"goodput-report-{paths.week}.html")  # fmt: skip
    return msg


def send_report(
    paths: ReportPaths,
    to: str | Sequence[str],
    *,
    settings: SmtpSettings | None = None,
    subject: str | None = None,
    attach_html: bool = False,
) -> EmailMessage:
    """Mail a report to ``to`` over SMTP.

    Args:
        paths: :func:`pipelines.report.weekly.build_weekly_report` output (with a PDF).
        to: one address or several.
        settings: default :meth:`SmtpSettings.from_env`.
        subject: default ``GPU fleet weekly report <week>``.
        attach_html: attach the self-contained HTML page too (about 5 MB: plotly.js inlined).

    Returns:
        The message sent.

    Raises:
        MailError: settings missing, nothing to attach, or the server refused the message.
    """
    cfg = settings or SmtpSettings.from_env()
    rcpt = [to] if isinstance(to, str) else list(to)
    msg = build_message(paths, rcpt, sender=cfg.sender, subject=subject, attach_html=attach_html)
    try:
        with smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout_s) as smtp:
            smtp.ehlo()
            if cfg.starttls:
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if cfg.user and cfg.password:
                smtp.login(cfg.user, cfg.password)
            refused = smtp.send_message(msg, from_addr=cfg.sender, to_addrs=rcpt)
    except (smtplib.SMTPException, OSError) as exc:
        raise MailError(f"mailing the report via {cfg.host}:{cfg.port} failed: {exc}") from exc
    if refused:
        raise MailError(f"the server refused some recipients: {sorted(refused)}")
    return msg
