"""Where and how events are exported: the broker URL, credentials, TLS, names.

:class:`ExportConfig` is what ``--export`` and its companion flags produce
(:mod:`ringtool.cli.export_args`); :func:`connect_options` turns it into the keyword
arguments of ``nats.connect`` (the one place credentials and TLS reach nats-py, for
the publisher and the collector alike). Everything here is validated before any BPF
program is loaded: a bad value is an :class:`~ringtool.errors.ExportError` with one
line that names the flag.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ringtool.errors import ExportError, InputFileError
from ringtool.kernel.files import read_regular, utf8_text

if TYPE_CHECKING:  # ssl is imported where a context is made: not by every `ringtool trace`
    import ssl

DEFAULT_STREAM = "RINGTOOL"
DEFAULT_PREFIX = "ringtool"
FORMATS = ("json", "rows")
#: A NATS subject token: no dots, wildcards or whitespace (``ringtool.<host>.<type>``).
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_STREAM = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}$")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
#: Hosts ``collect`` keeps at most by default (``--max-hosts``): each costs memory and
#: a line of every output, and host names come from the network.
MAX_HOSTS = 4096
#: The largest credentials file and CA bundle read (a CA bundle of every public
#: authority is about 200 KiB).
CREDS_MAX = 64 << 10
CA_MAX = 4 << 20


@dataclass(frozen=True)
class ExportConfig:
    """One exporter's settings.

    ``url`` is ``nats://[user:password@]host:port`` (or ``tls://``), or several
    separated by commas (the servers of one cluster: a connection goes to any that
    answers); ``stream`` the JetStream stream (created when missing, subjects
    ``<prefix>.>``, ``replicas`` copies: 0 means :func:`default_replicas`);
    ``subject_prefix`` the first subject tokens; ``fmt`` ``json`` or ``rows`` (see
    :mod:`ringtool.export.wire`); ``creds`` a file with ``user:password`` on its
    first line; ``tls_ca`` a CA bundle that verifies the server; ``host`` the host
    name in every subject and message; ``optional``: an unreachable broker at start
    is a note, not an error; ``queue_bytes`` bounds what waits for the broker;
    ``drain_s`` how long the end of a run waits for outstanding acknowledgements.
    """

    url: str
    stream: str = DEFAULT_STREAM
    subject_prefix: str = DEFAULT_PREFIX
    fmt: str = "json"
    creds: Path | None = None
    tls_ca: Path | None = None
    host: str = ""
    optional: bool = False
    queue_bytes: int = 64 << 20
    #: events per message at most; 0: 8192 for ``rows``, 2048 for ``json``
    batch_events: int = 0
    drain_s: float = 5.0
    connect_timeout_s: float = 2.0
    replicas: int = 0

    @property
    def stream_replicas(self) -> int:
        return self.replicas or default_replicas(self.url)

    def subject(self, host: str, kind: str) -> str:
        return f"{self.subject_prefix}.{host}.{kind}"

    @property
    def all_subjects(self) -> str:
        return f"{self.subject_prefix}.>"


def split_urls(text: str) -> list[str]:
    """The server URLs of ``text``: one, or several separated by commas."""
    return [u.strip() for u in text.split(",")]


def default_replicas(url: str) -> int:
    """Replicas of a stream the exporter creates: 3 when ``url`` names three or more
    servers (a cluster: the stream then outlives one node), else 1."""
    return 3 if len(set(split_urls(url))) >= 3 else 1


def check_url(text: str) -> str:
    """``text`` when it is a NATS URL this exporter can use, or several separated by
    commas, else ExportError (the message quotes the URL with its password masked)."""
    urls = split_urls(text)
    if len(urls) > 1:
        for i, url in enumerate(urls, 1):
            if not url:
                raise ExportError(f"{display_url(text)!r}: server {i} of the list is empty")
            _check_one(url)
        return text
    _check_one(text)
    return text


def _check_one(text: str) -> None:
    shown = repr(display_url(text))
    try:
        parts = urlsplit(text)
    except ValueError:
        raise ExportError(f"{shown}: not a URL (nats://HOST:PORT)") from None
    if parts.scheme not in ("nats", "tls"):
        raise ExportError(f"{shown}: the URL must start with nats:// or tls://")
    try:
        port = parts.port
    except ValueError:
        raise ExportError(f"{shown}: the port must be a number from 1 to 65535") from None
    if not parts.hostname:
        raise ExportError(f"{shown}: no host (nats://HOST:PORT)")
    if port == 0:
        raise ExportError(f"{shown}: port 0")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ExportError(f"{shown}: a NATS URL has no path or query")


def display_url(url: str) -> str:
    """``url`` with its password masked, ``scheme://user:***@...`` (what notes and
    errors print); any text, also one that is not a valid URL, is masked the same way."""
    return re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", url)


def is_token(text: str) -> bool:
    """Whether ``text`` is one subject token ringtool uses: 1-64 letters, digits, '_'
    or '-' (a host name, a type, a durable name)."""
    return bool(_TOKEN.fullmatch(text))


def check_token(text: str, what: str) -> str:
    if not _TOKEN.fullmatch(text):
        raise ExportError(f"{what} {text!r}: use 1-64 letters, digits, '_' or '-'")
    return text


def check_stream(text: str, flag: str = "--export-stream") -> str:
    if not _STREAM.fullmatch(text):
        raise ExportError(f"{flag} {text!r}: use 1-64 letters, digits, '_' or '-'")
    return text


def check_prefix(text: str, flag: str = "--export-subject-prefix") -> str:
    if not _PREFIX.fullmatch(text):
        raise ExportError(
            f"{flag} {text!r}: dot-separated tokens of letters, digits, '_' or '-' (no wildcards)"
        )
    return text


def default_host() -> str:
    """This machine's name as a subject token (dots and other characters become '_')."""
    # uname's node name is gethostname(2)'s (no socket module: start-up milliseconds)
    name = re.sub(r"[^A-Za-z0-9_-]", "_", os.uname().nodename.split(".")[0])[:64]
    return name or "localhost"


def boot_id() -> str:
    """The kernel's boot id (``/proc/sys/kernel/random/boot_id``): tells two boots of
    one host apart (their monotonic clocks and sequences restart)."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown"


def parse_creds(data: bytes, path: Path) -> tuple[str, str]:
    """``(user, password)`` from the first line ``user:password`` of ``data``, the
    contents of the credentials file ``path`` (named in the ExportError)."""
    try:
        lines = utf8_text(data).splitlines()
    except ValueError as exc:
        raise ExportError(f"credentials file {path}: {exc}") from None
    user, sep, password = (lines[0].strip() if lines else "").partition(":")
    if not sep or not user:
        raise ExportError(f"credentials file {path}: the first line must be user:password")
    return user, password


def ca_context(data: bytes, path: Path) -> ssl.SSLContext:
    """A client context that verifies the server against ``data``, the contents of the
    CA bundle ``path``: PEM text or DER bytes (an ExportError names ``path``)."""
    import ssl

    try:
        return ssl.create_default_context(cadata=data.decode("ascii") if data.isascii() else data)
    except (ssl.SSLError, ValueError, OSError) as exc:
        why = "no certificate in it" if not data.strip() else str(exc)
        raise ExportError(f"CA bundle {path}: not a PEM or DER certificate bundle: {why}") from None


def _read(path: Path, limit: int, what: str) -> bytes:
    try:
        return read_regular(path, limit)
    except InputFileError as exc:
        raise ExportError(f"{what} {path}: {exc.why}") from None
    except OSError as exc:
        raise ExportError(f"{what} {path}: {exc.strerror}") from None


def read_creds(path: Path) -> tuple[str, str]:
    """``(user, password)`` of the credentials file ``path`` (read as
    :func:`ringtool.kernel.files.read_regular` reads: no FIFO, at most ``CREDS_MAX``)."""
    return parse_creds(_read(path, CREDS_MAX, "credentials file"), path)


def tls_context(ca: Path) -> ssl.SSLContext:
    """A client context that verifies the server against the CA bundle ``ca``."""
    return ca_context(_read(ca, CA_MAX, "CA bundle"), ca)


#: How long a publish may wait for nats-py to flush its pending buffer to the socket.
FLUSH_TIMEOUT_S = 2.0
#: Reconnect backoff of the exporter and the collector: doubles from MIN to MAX.
BACKOFF_MIN_S = 0.1
BACKOFF_MAX_S = 5.0


def connect_options(
    url: str, creds: Path | None, tls_ca: Path | None, timeout_s: float, inbox: str = ""
) -> dict[str, Any]:
    """Keyword arguments of ``nats.connect`` for ``url`` plus the credential and TLS
    flags. A user/password in the URL is passed as is; ``creds`` overrides it. The
    caller does its own reconnecting (``allow_reconnect=False``) and passes its own
    ``error_cb`` (:func:`quiet_callbacks`: nats-py's default prints tracebacks).
    ``inbox``: the prefix of the connection's reply subjects (:func:`inbox_prefix`),
    so a broker can let each user subscribe to its own replies only."""
    parsed = [urlsplit(u) for u in split_urls(url)]
    servers = [f"{p.scheme}://{p.hostname}" + (f":{p.port}" if p.port else "") for p in parsed]
    opts: dict[str, Any] = {
        "servers": servers,
        # several servers (a cluster): nats-py tries them in random order (spreading a
        # fleet's connections), the next when one does not answer
        "allow_reconnect": False,
        "connect_timeout": timeout_s,
        # nats-py: 0 means "forever"; 1 gives up after a second attempt 50 ms later
        "max_reconnect_attempts": 1,
        "reconnect_time_wait": 0.05,
        # nats-py's default (None) lets a publish that forces a flush wait for ever
        # when the connection dies under it: its flush request stays queued to a flusher
        # that close() cancelled. Bounded, the publish returns and the caller sees the
        # closed connection (tests/export/test_faults.py).
        "flush_timeout": FLUSH_TIMEOUT_S,
        "name": "ringtool",
    }
    if inbox:
        opts["inbox_prefix"] = inbox
    named = [p for p in parsed if p.username]  # the first URL with a user gives it
    if named:
        opts["user"] = unquote(named[0].username or "")
        opts["password"] = unquote(named[0].password or "")
    if creds is not None:
        opts["user"], opts["password"] = read_creds(creds)
    if tls_ca is not None:
        opts["tls"] = tls_context(tls_ca)
    elif any(p.scheme == "tls" for p in parsed):
        import ssl

        opts["tls"] = ssl.create_default_context()
    return opts


def inbox_prefix(role: str, name: str) -> str:
    """``_INBOX.<role>.<name>``: the reply subjects of an exporter (``host``, its host
    name) or a collector (``collect``, its durable consumer name). A broker that gives
    each user subscribe rights on its own ``_INBOX.host.<host>.>`` only keeps one
    host from reading another's acknowledgements (docs/fleet.md)."""
    return f"_INBOX.{role}.{name}" if is_token(name) else ""


def connected_server(nc: Any, fallback: str) -> str:
    """The server a nats-py connection ``nc`` is on (``nats://HOST:PORT``, never with a
    password: the pool has none), or ``fallback`` when it is not connected."""
    uri = getattr(nc, "connected_url", None)
    if uri is None or not uri.hostname:
        return fallback
    return f"{uri.scheme}://{uri.hostname}" + (f":{uri.port}" if uri.port else "")


def describe_error(exc: BaseException) -> str:
    """One line for a connection error (``Connection refused``, a TLS failure,
    nats-py's message)."""
    import ssl

    if isinstance(exc, ssl.SSLError):
        detail = getattr(exc, "verify_message", "") or ""
        return f"TLS: {exc.reason or exc}" + (f": {detail}" if detail else "")
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    text = str(exc).strip().splitlines()
    name = type(exc).__name__
    if not text or text[0] in ("", name):
        return name
    return text[0].strip("'\"")


def quiet_callbacks(errors: list[BaseException]) -> dict[str, Any]:
    """nats-py callbacks that print nothing: errors are appended to ``errors`` (the
    caller says what went wrong in one line)."""

    async def on_error(exc: BaseException) -> None:
        errors.append(exc)
        del errors[:-4]

    async def nothing() -> None:
        return None

    return {"error_cb": on_error, "disconnected_cb": nothing, "closed_cb": nothing}


def quiet_task_errors(errors: list[BaseException]) -> Callable[..., None]:
    """An asyncio loop exception handler that appends to ``errors`` instead of printing:
    nats-py's own tasks can end with an exception nobody retrieves (its read loop, when
    closing a connection the broker reset fails), which asyncio prints as a traceback.
    The caller notices the closed connection and says so in one line."""

    def handler(_loop: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        errors.append(exc if exc is not None else RuntimeError(context.get("message")))
        del errors[:-4]

    return handler


__all__ = [
    "BACKOFF_MAX_S",
    "BACKOFF_MIN_S",
    "CA_MAX",
    "CREDS_MAX",
    "DEFAULT_PREFIX",
    "DEFAULT_STREAM",
    "FORMATS",
    "MAX_HOSTS",
    "ExportConfig",
    "boot_id",
    "ca_context",
    "check_prefix",
    "check_stream",
    "check_token",
    "check_url",
    "connect_options",
    "connected_server",
    "default_host",
    "default_replicas",
    "describe_error",
    "display_url",
    "inbox_prefix",
    "is_token",
    "parse_creds",
    "quiet_callbacks",
    "quiet_task_errors",
    "read_creds",
    "split_urls",
    "tls_context",
]
