"""The HTTP side of ``--metrics``: one thread, a selector, bounded connections.

prometheus-client's ``start_http_server`` starts a thread per connection and never
times one out: a few hundred idle or half-sent requests mean a few hundred threads
(and the GIL they compete for is the one the trace drains its rings with). This
server answers the same scrapes with a fixed cost:

- one daemon thread runs a :mod:`selectors` loop; every socket is non-blocking;
- at most :data:`MAX_CONNECTIONS` are open at once: when a new one arrives at the
  limit, the connection idle the longest is closed first (a flood of idle sockets
  cannot lock a real scrape out; it only evicts itself);
- a connection that has not sent a whole request head within :data:`IDLE_TIMEOUT`
  seconds (or whose reply is not taken within that time) is closed;
- a request head longer than :data:`MAX_REQUEST` bytes gets ``431`` and is closed;
- ``GET`` (or ``HEAD``) of ``/metrics`` or ``/`` gets the registry in the text
  exposition format (``generate_latest``), anything else ``404``/``405``; every reply
  is HTTP/1.0 with ``Connection: close``.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

#: Open connections at most (the oldest idle one is closed to admit a new one).
MAX_CONNECTIONS = 32
#: Seconds a connection may take to send its request head / take its reply.
IDLE_TIMEOUT = 5.0
#: Bytes of request head at most.
MAX_REQUEST = 8192


@dataclass
class _Conn:
    sock: socket.socket
    since: float
    inbox: bytearray = field(default_factory=bytearray)
    outbox: bytes = b""
    sent: int = 0


def _reply(
    status: str, body: bytes, ctype: str = "text/plain; charset=utf-8", head: bool = False
) -> bytes:
    lines = [f"HTTP/1.0 {status}", f"Content-Type: {ctype}", f"Content-Length: {len(body)}",
             "Connection: close", "", ""]  # fmt: skip
    return "\r\n".join(lines).encode() + (b"" if head else body)


class MetricsHttpServer:
    """Serves ``registry`` on ``(host, port)`` (see the module doc); :attr:`port` is the
    bound port (useful with port 0). Raises OSError when it cannot listen."""

    def __init__(self, host: str, port: int, registry: Any) -> None:
        self.registry = registry
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listen = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listen.bind((host, port))
            self._listen.listen(64)
            self._listen.setblocking(False)
        except OSError:
            self._listen.close()
            raise
        self.port = int(self._listen.getsockname()[1])
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listen, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._conns: dict[int, _Conn] = {}
        self._stop = False
        #: connections closed for the limit / for a timeout / for a too long head
        self.evicted = self.timed_out = self.too_long = 0
        self._thread = threading.Thread(target=self._loop, name="ringtool-metrics", daemon=True)
        self._thread.start()

    def connections(self) -> int:
        """Connections open now."""
        return len(self._conns)

    def _loop(self) -> None:
        try:
            while not self._stop:
                for key, mask in self._sel.select(timeout=0.5):
                    if key.fileobj is self._listen:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
                    else:
                        self._serve(key.data, mask)
                self._expire(time.monotonic())
        finally:
            for c in list(self._conns.values()):
                self._drop(c)
            self._sel.close()
            self._listen.close()
            self._wake_r.close()

    def _accept(self) -> None:
        for _ in range(64):  # a burst, without starving the open connections
            try:
                sock, _addr = self._listen.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # EMFILE and friends: the backlog keeps them for later
            if len(self._conns) >= MAX_CONNECTIONS:
                oldest = min(self._conns.values(), key=lambda c: c.since)
                self._drop(oldest)
                self.evicted += 1
            sock.setblocking(False)
            conn = _Conn(sock, time.monotonic())
            self._conns[sock.fileno()] = conn
            self._sel.register(sock, selectors.EVENT_READ, conn)

    def _serve(self, conn: _Conn, mask: int) -> None:
        try:
            if mask & selectors.EVENT_READ and not conn.outbox:
                data = conn.sock.recv(4096)
                if not data:
                    self._drop(conn)
                    return
                conn.inbox += data
                self._parse(conn)
            if conn.outbox:
                conn.sent += conn.sock.send(conn.outbox[conn.sent :])
                if conn.sent >= len(conn.outbox):
                    self._drop(conn)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)

    def _parse(self, conn: _Conn) -> None:
        end = conn.inbox.find(b"\r\n\r\n")
        if end < 0:
            end = conn.inbox.find(b"\n\n")
        if end < 0:
            if len(conn.inbox) > MAX_REQUEST:
                self.too_long += 1
                self._respond(conn, _reply("431 Request Header Fields Too Large", b"too long\n"))
            return
        method, _, rest = bytes(conn.inbox[:end]).partition(b" ")
        target = rest.split(b" ", 1)[0].split(b"?", 1)[0]
        head = method == b"HEAD"
        if method not in (b"GET", b"HEAD"):
            self._respond(conn, _reply("405 Method Not Allowed", b"GET /metrics\n"))
        elif target not in (b"/metrics", b"/"):
            self._respond(conn, _reply("404 Not Found", b"GET /metrics\n", head=head))
        else:
            from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

            body = generate_latest(self.registry)
            self._respond(conn, _reply("200 OK", body, CONTENT_TYPE_LATEST, head=head))

    def _respond(self, conn: _Conn, data: bytes) -> None:
        conn.outbox, conn.since = data, time.monotonic()
        self._sel.modify(conn.sock, selectors.EVENT_WRITE, conn)

    def _expire(self, now: float) -> None:
        for conn in [c for c in self._conns.values() if now - c.since > IDLE_TIMEOUT]:
            self.timed_out += 1  # counted before the close a client sees
            self._drop(conn)

    def _drop(self, conn: _Conn) -> None:
        self._conns.pop(conn.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(conn.sock)
        conn.sock.close()

    def close(self) -> None:
        """Stop serving, close every connection and the listening socket."""
        self._stop = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(5)
        self._wake_w.close()


__all__ = ["IDLE_TIMEOUT", "MAX_CONNECTIONS", "MAX_REQUEST", "MetricsHttpServer"]
