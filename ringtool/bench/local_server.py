"""A throwaway ``nats-server`` with JetStream on 127.0.0.1, for benchmarks and tests.

:class:`LocalNats` runs ``nats-server -js -sd DIR -a 127.0.0.1 -p PORT`` (file
storage in ``DIR``, a free port chosen at start), optionally requiring a user and
password, TLS or a configuration file (``-c``: users and their permissions; the
address, port and store given as flags override the file's; ``extra``: more flags, e.g.
a cluster node's), and waits until the server says it is ready. :meth:`~LocalNats.stop`
and :meth:`~LocalNats.start` again keep the port and the store: a broker restart.
Nothing listens beyond 127.0.0.1.

The binary is Debian's on the PATH (:func:`nats_binary`), or the one given. Debian 12's
2.9.10 runs an account purge asked from any account (docs/fleet.md): the tests of the
fleet guide's permissions also run Debian 13's 2.10.27, which ``make setup`` unpacks
into the venv (:func:`fixed_nats_binary`, scripts/nats-server.sh).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ringtool.errors import ExportError
from ringtool.kernel.closing import Closing


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        if time.monotonic() > deadline:
            raise ExportError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")
        time.sleep(0.05)


def nats_binary() -> Path | None:
    """The nats-server ringtool's servers run: the first on the PATH, else Debian's
    ``/usr/sbin/nats-server``; None when there is none."""
    for candidate in (shutil.which("nats-server"), "/usr/sbin/nats-server"):
        if candidate is not None and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def fixed_nats_binary() -> Path | None:
    """Debian 13's nats-server (2.10.27 or later: no account purge for other accounts)
    that ``make setup`` unpacks at ``sys.prefix``/libexec/nats-server; None without it."""
    path = Path(sys.prefix) / "libexec" / "nats-server"
    return path if os.access(path, os.X_OK) else None


class LocalNats(Closing):
    """See the module doc."""

    def __init__(
        self,
        store: Path,
        user: str | None = None,
        password: str | None = None,
        tls: tuple[Path, Path] | None = None,
        conf: Path | None = None,
        extra: tuple[str, ...] = (),
        binary: Path | None = None,
    ) -> None:
        binary = binary or nats_binary()
        if binary is None:
            raise ExportError("no nats-server on the PATH: run `make setup` (Debian package)")
        self.binary = str(binary)
        self.store = store
        store.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.user, self.password = user, password
        self.tls = tls  # (certificate, key): clients must use TLS
        self.conf = conf  # a configuration file (users, permissions); the flags win
        self.extra = extra  # more nats-server flags, e.g. a cluster's --routes
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = store / "nats.log"
        self.start()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        if self.proc is not None:
            return
        args = [self.binary, *(["-c", str(self.conf)] if self.conf else []),
                "-js", "-sd", str(self.store / "js"), "-a", "127.0.0.1",
                "-p", str(self.port), "-l", str(self.log)]  # fmt: skip
        if self.user:
            args += ["--user", self.user, "--pass", str(self.password)]
        if self.tls:
            args += ["--tls", "--tlscert", str(self.tls[0]), "--tlskey", str(self.tls[1])]
        args += self.extra
        ready = self._log_text().count("Server is ready")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while self._log_text().count("Server is ready") <= ready:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ExportError(f"nats-server did not start (see {self.log})")
            time.sleep(0.05)
        wait_port(self.port)

    def _log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def close(self) -> None:
        """:meth:`stop` the server (SIGTERM): what leaving the ``with`` block does."""
        self.stop()


__all__ = ["LocalNats", "fixed_nats_binary", "free_port", "nats_binary", "wait_port"]
