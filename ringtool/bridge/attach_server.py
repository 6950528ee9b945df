"""The server side of the KMES attach protocol v2 (docs/kmes.md section 11):
:class:`AttachServer`.

Wire format (see :mod:`ringtool.kmes.attach` for the client):

* request: the line ``ATTACH\n`` (at most 64 bytes are read);
* reply: one JSON line ``{"version": 2, "cpus": [...], "capacity": N, "generation": G,
  "fds_per_cpu": 2}`` and ``2 * len(cpus)`` descriptors in the order meta0, data0,
  meta1, data1, ... . The descriptors travel in chunks of at most :data:`FD_CHUNK`
  (an even number) per ``sendmsg`` (one SCM_RIGHTS message carries at most 253): the
  first chunk with the JSON line, each later chunk with the single byte ``b" "``. A
  client reads the line up to ``"\n"``, then keeps receiving until it holds
  ``2 * len(cpus)`` descriptors, ignoring the space bytes.
* refusal: one line ``{"error": "..."}`` and no descriptors.

Robustness: every send uses ``MSG_NOSIGNAL`` (a peer that went away is EPIPE, never
SIGPIPE); the listen backlog is :data:`BACKLOG`. One thread serves every connection
through a selector (no thread per client): a connection costs nothing until its request
line is complete, at most :data:`MAX_HANDSHAKES` wait for theirs at once (beyond that a
new connection is closed at once), and each must finish within
:data:`HANDSHAKE_TIMEOUT` seconds in total, or it is dropped. So silent or slow clients
never delay an honest one.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import selectors
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ringtool.errors import KmesAttachError, RingtoolError
from ringtool.kmes.attach_protocol import (
    FDS_PER_CPU,
    PROTOCOL_VERSION,
    REQUEST,
    AttachInfo,
)

FD_CHUNK = 252  # descriptors per sendmsg: <= SCM_MAX_FD, even (whole CPUs)
CHUNK_FILLER = b" "  # the payload of every sendmsg after the first
BACKLOG = 512
MAX_HANDSHAKES = 1024  # connections waiting for their request line
HANDSHAKE_TIMEOUT = 2.0  # seconds, for the whole exchange
SEND_TIMEOUT = 0.5  # seconds a reply may block (it fits in the socket buffer)
_UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid


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

    def __init__(
        self,
        path: str,
        provide: Callable[[], AttachInfo],
        *,
        mode: int = 0o660,
        on_attach: Callable[[int, int], None] | None = None,
    ) -> None:
        self.path = path
        self._provide = provide
        #: called (in the server thread, the connection still open) with the peer's
        #: SO_PEERCRED pid and uid after each reply that carried descriptors
        self._on_attach = on_attach
        self.served = 0
        self.refused = 0
        self.failed = 0  # handshakes that timed out, broke off or could not be answered
        self._pending: dict[socket.socket, tuple[float, bytearray]] = {}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._unlink_stale()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self._sock.bind(path)
            os.chmod(path, mode)
            self._sock.listen(BACKLOG)
            self._sock.setblocking(False)
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
        try:
            while True:
                now = time.monotonic()
                wait = min((d for d, _ in self._pending.values()), default=now + 1.0) - now
                for key, _ev in self._sel.select(max(wait, 0.0)):
                    if key.fileobj == self._stop_r:
                        return
                    if key.fileobj is self._sock:
                        self._accept_all()
                    else:
                        conn = key.fileobj
                        assert isinstance(conn, socket.socket)
                        self._readable(conn)
                self._expire(time.monotonic())
        finally:
            for conn in list(self._pending):
                self._drop(conn)

    def _accept_all(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. EMFILE: the backlog keeps the rest for later
                self.failed += 1
                return
            if len(self._pending) >= MAX_HANDSHAKES:
                conn.close()
                self.failed += 1
                continue
            conn.setblocking(False)
            self._pending[conn] = (time.monotonic() + HANDSHAKE_TIMEOUT, bytearray())
            self._sel.register(conn, selectors.EVENT_READ)

    def _drop(self, conn: socket.socket) -> None:
        self._pending.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(conn)
        conn.close()

    def _expire(self, now: float) -> None:
        for conn, (deadline, _) in list(self._pending.items()):
            if now >= deadline:
                self.failed += 1
                self._drop(conn)

    def _readable(self, conn: socket.socket) -> None:
        _deadline, request = self._pending[conn]
        try:
            chunk = conn.recv(64 - len(request))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.failed += 1
            self._drop(conn)
            return
        request += chunk
        if not request.endswith(b"\n") and len(request) < 64:
            return
        self._pending.pop(conn)
        self._sel.unregister(conn)
        try:
            with conn:
                conn.settimeout(SEND_TIMEOUT)
                self._answer(conn, bytes(request))
        except Exception:  # never a traceback, never the server's end; the client sees EOF
            self.failed += 1

    def _allowed(self, pid: int, uid: int, gid: int) -> bool:
        if uid in (0, os.geteuid()) or gid == self._gid:
            return True
        return self._gid in _peer_groups(pid)

    def _answer(self, conn: socket.socket, request: bytes) -> None:
        """Answer a complete request line (``conn`` blocking, with a send timeout)."""
        deadline = time.monotonic() + SEND_TIMEOUT
        try:
            if request != REQUEST:
                _send_line(conn, deadline, b'{"error": "expected ATTACH"}')
                self.failed += 1
                return
            pid, uid, gid = _UCRED.unpack(
                conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
            )
            if not self._allowed(pid, uid, gid):
                self.refused += 1
                _send_line(
                    conn, deadline, b'{"error": "permission denied (root or the socket group)"}'
                )
                return
            try:
                info = self._provide()
            except (RingtoolError, OSError) as exc:
                self.failed += 1
                _send_line(conn, deadline, json.dumps({"error": f"bridge: {exc}"}).encode())
                return
            try:
                _send_reply(conn, deadline, info)
            finally:
                for fd in info.fds:
                    os.close(fd)
            self.served += 1
            if self._on_attach is not None:
                self._on_attach(pid, uid)
        except OSError:  # timed out, reset, or went away: its own problem
            self.failed += 1

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


def _send_line(conn: socket.socket, deadline: float, line: bytes) -> None:
    """Send ``line + b"\\n"`` (MSG_NOSIGNAL, within ``deadline``)."""
    conn.settimeout(max(deadline - time.monotonic(), 0.001))
    conn.sendall(line + b"\n", socket.MSG_NOSIGNAL)


def _send_reply(conn: socket.socket, deadline: float, info: AttachInfo) -> None:
    """The JSON line with the first :data:`FD_CHUNK` descriptors, then one
    ``CHUNK_FILLER`` byte per further chunk (all MSG_NOSIGNAL, within ``deadline``)."""
    line = (
        json.dumps(
            {
                "version": PROTOCOL_VERSION,
                "cpus": info.cpus,
                "capacity": info.capacity,
                "generation": info.generation,
                "fds_per_cpu": FDS_PER_CPU,
            }
        ).encode()
        + b"\n"
    )
    fds = info.fds
    first = True
    for i in range(0, max(len(fds), 1), FD_CHUNK):
        chunk = fds[i : i + FD_CHUNK]
        payload = line if first else CHUNK_FILLER
        first = False
        while payload:
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", chunk))] if chunk else []
            sent = conn.sendmsg([payload], anc, socket.MSG_NOSIGNAL)
            payload, chunk = payload[sent:], []  # descriptors go with the first byte
