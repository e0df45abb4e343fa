"""Mailing a report to a local SMTP server (a minimal stdlib server on 127.0.0.1, in this test)."""

from __future__ import annotations

import base64
import email
import email.policy
import json
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pipelines.report import MailError, ReportPaths, SmtpSettings, send_report


@dataclass
class _Inbox:
    messages: list[tuple[str, list[str], bytes]] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)


class _Handler(socketserver.StreamRequestHandler):
    """Just enough SMTP (RFC 5321) for smtplib: EHLO, AUTH PLAIN, MAIL, RCPT, DATA, QUIT."""

    inbox: _Inbox

    def _reply(self, text: str) -> None:
        self.wfile.write(text.encode("ascii") + b"\r\n")

    def handle(self) -> None:
        self._reply("220 127.0.0.1 test SMTP")
        sender = ""
        rcpt: list[str] = []
        while line := self.rfile.readline():
            cmd = line.decode("ascii").rstrip("\r\n")
            verb = cmd.split(" ", 1)[0].upper()
            if verb == "EHLO":
                self._reply("250-127.0.0.1\r\n250-AUTH PLAIN\r\n250 8BITMIME")
            elif verb == "HELO" or verb == "RSET" or verb == "NOOP":
                self._reply("250 OK")
            elif verb == "AUTH":
                creds = base64.b64decode(cmd.split()[2]).split(b"\0")
                self.inbox.logins.append(creds[1].decode())
                self._reply("235 Authentication successful")
            elif verb == "MAIL":
                sender, rcpt = cmd.split(":", 1)[1].split()[0].strip("<>"), []
                self._reply("250 OK")
            elif verb == "RCPT":
                rcpt.append(cmd.split(":", 1)[1].strip().strip("<>"))
                self._reply("250 OK")
            elif verb == "DATA":
                self._reply("354 End data with <CR><LF>.<CR><LF>")
                body = []
                while (chunk := self.rfile.readline()) != b".\r\n":
                    body.append(chunk[1:] if chunk.startswith(b"..") else chunk)
                self.inbox.messages.append((sender, rcpt, b"".join(body)))
                self._reply("250 OK queued")
            elif verb == "QUIT":
                self._reply("221 Bye")
                return
            else:
                self._reply("502 Command not implemented")


@pytest.fixture
def smtp_server() -> Iterator[tuple[int, _Inbox]]:
    """A threaded SMTP server on a free loopback port; its inbox."""
    inbox = _Inbox()
    handler = type("Handler", (_Handler,), {"inbox": inbox})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], inbox
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def paths(tmp_path: Path) -> ReportPaths:
    """A report folder with a small PDF, page and sidecar (no browser needed)."""
    folder = tmp_path / "2026-W45"
    folder.mkdir()
    (folder / "report.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n%%EOF\n")
    (folder / "report.html").write_text("<html></html>", encoding="utf-8")
    (folder / "report.json").write_text(
        json.dumps({"narrative": ["Occupancy was 50 %.", "Jain's index was 0.84."]}),
        encoding="utf-8",
    )
    return ReportPaths("2026-W45", folder, folder / "report.html", folder / "report.json",
                       folder / "report.pdf", written=True)  # fmt: skip


def test_one_message_with_the_pdf_attached(
    smtp_server: tuple[int, _Inbox], paths: ReportPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings from GOODPUT_SMTP_*: login, one message, the PDF attached byte for byte."""
    port, inbox = smtp_server
    for key, value in {
        "GOODPUT_SMTP_HOST": "127.0.0.1", "GOODPUT_SMTP_PORT": str(port),
        "GOODPUT_SMTP_USER": "reporter", "GOODPUT_SMTP_PASSWORD": "s3cret",
        "GOODPUT_SMTP_FROM": "goodput@example.org", "GOODPUT_SMTP_STARTTLS": "0",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    send_report(paths, ["lead@example.org", "cfo@example.org"])
    assert len(inbox.messages) == 1
    assert inbox.logins == ["reporter"]
    sender, rcpt, raw = inbox.messages[0]
    assert sender == "goodput@example.org"
    assert rcpt == ["lead@example.org", "cfo@example.org"]
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["Subject"] == "GPU fleet weekly report 2026-W45"
    body = msg.get_body(preferencelist=("plain",))
    assert body is not None and "Jain's index was 0.84." in body.get_content()
    pdfs = [p for p in msg.iter_attachments() if p.get_content_type() == "application/pdf"]
    assert len(pdfs) == 1
    assert pdfs[0].get_filename() == "goodput-report-2026-W45.pdf"
    assert pdfs[0].get_content() == paths.pdf.read_bytes()  # type: ignore[union-attr]


def test_settings_need_host_and_sender() -> None:
    """Without GOODPUT_SMTP_HOST / _FROM nothing is sent and the error names the variables."""
    with pytest.raises(MailError, match="GOODPUT_SMTP_HOST"):
        SmtpSettings.from_env({"GOODPUT_SMTP_FROM": "a@b"})
    s = SmtpSettings.from_env(
        {"GOODPUT_SMTP_HOST": "mx", "GOODPUT_SMTP_FROM": "a@b", "GOODPUT_SMTP_STARTTLS": "yes"}
    )
    assert s.port == 587 and s.starttls and s.user is None


def test_missing_pdf_is_an_error(paths: ReportPaths, smtp_server: tuple[int, _Inbox]) -> None:
    """A report without its PDF is not mailed."""
    port, inbox = smtp_server
    paths.pdf.unlink()  # type: ignore[union-attr]
    with pytest.raises(MailError, match="no PDF"):
        settings = SmtpSettings(host="127.0.0.1", port=port, sender="g@example.org")
        send_report(paths, "lead@example.org", settings=settings)
    assert inbox.messages == []
