"""The server side of the KMES attach protocol (DESIGN.md): :class:`AttachServer`.

See :mod:`ringtool.kmes.attach` for the protocol and the client.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import stat
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ringtool.errors import KmesAttachError

DEFAULT_SOCKET = "/run/ringtool/kmes.sock"
PROTOCOL_VERSION = 1
REQUEST = b"ATTACH\n"
SCM_MAX_FD = 253  # the kernel's limit of descriptors in one SCM_RIGHTS message
_UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid


@dataclass(frozen=True, slots=True)
class AttachInfo:
    """What the server hands out. ``fds`` are fresh descriptors (e.g. ``os.dup``) that the
    server closes once sent, so the provider may close its own at any time."""

    cpus: list[int]
    fds: list[int]
    capacity: int
    generation: int


def _peer_groups(pid: int) -> set[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Groups:"):
                return {int(g) for g in line.split()[1:]}
    except OSError:
        pass
    return set()


class AttachServer:
    """Serves the attach protocol on ``path`` from a background thread.

    ``provide()`` is called per accepted request (the provider does its own locking)
    and returns the current :class:`AttachInfo`; the server sends, then closes, its
    ``fds``. Creates the socket's directory if needed; replaces a stale socket file;
    refuses to start if another server answers there.
    """

    def __init__(self, path: str, provide: Callable[[], AttachInfo], *, mode: int = 0o660) -> None:
        self.path = path
        self._provide = provide
        self.served = 0
        self.refused = 0
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._unlink_stale()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self._sock.bind(path)
            os.chmod(path, mode)
            self._sock.listen(64)
        except OSError as exc:
            self._sock.close()
            raise KmesAttachError(f"cannot listen on {path}: {exc.strerror}") from None
        self._gid = os.stat(path).st_gid
        self._ino = os.stat(path).st_ino
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._sock, selectors.EVENT_READ)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._sel.register(self._stop_r, selectors.EVENT_READ)
        self._thread: threading.Thread | None = None

    def _unlink_stale(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise KmesAttachError(f"{self.path} exists and is not a socket")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.path)
        except OSError:
            os.unlink(self.path)  # stale: nobody listens
            return
        finally:
            probe.close()
        raise KmesAttachError(f"another KMES bridge is serving {self.path}")

    def start(self) -> None:
        """Serve in a daemon thread until :meth:`close`."""
        self._thread = threading.Thread(target=self.serve, name="kmes-attach", daemon=True)
        self._thread.start()

    def serve(self) -> None:
        """Serve until :meth:`close` (blocking)."""
        while True:
            for key, _ev in self._sel.select():
                if key.fileobj == self._stop_r:
                    return
                try:
                    conn, _ = self._sock.accept()
                except OSError:
                    continue
                # One short-lived thread per client: a client that connects and then
                # says nothing (2 s timeout) delays no one else.
                threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    def _serve_one(self, conn: socket.socket) -> None:
        with conn:
            self._handle(conn)

    def _allowed(self, conn: socket.socket) -> bool:
        pid, uid, gid = _UCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        )
        if uid in (0, os.geteuid()) or gid == self._gid:
            return True
        return self._gid in _peer_groups(pid)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        try:
            request = b""
            while not request.endswith(b"\n") and len(request) < 64:
                chunk = conn.recv(64 - len(request))
                if not chunk:
                    return
                request += chunk
            if request != REQUEST:
                conn.sendall(b'{"error": "expected ATTACH"}\n')
                return
            if not self._allowed(conn):
                self.refused += 1  # (counters are approximate across client threads)
                conn.sendall(b'{"error": "permission denied (root or the socket group)"}\n')
                return
            info = self._provide()
            try:
                self._send(conn, info)
            finally:
                for fd in info.fds:
                    os.close(fd)
            self.served += 1
        except OSError:
            return  # a client that went away is its own problem

    @staticmethod
    def _send(conn: socket.socket, info: AttachInfo) -> None:
        line = json.dumps(
            {
                "version": PROTOCOL_VERSION,
                "cpus": info.cpus,
                "capacity": info.capacity,
                "generation": info.generation,
            }
        )
        socket.send_fds(conn, [line.encode() + b"\n"], info.fds)

    def close(self) -> None:
        """Stop serving, remove the socket file (if still ours)."""
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(5)
        self._sel.close()
        self._sock.close()
        os.close(self._stop_r)
        os.close(self._stop_w)
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._ino:
                os.unlink(self.path)
