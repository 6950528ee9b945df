"""A TCP workload of known sizes for the tcp source's kernel tests, and its own record.

Run as a script (``python tcp_workload.py CLIENT_COMM SERVER_COMM``; it imports nothing
of ringtool): the process names itself CLIENT_COMM and forks a server child named
SERVER_COMM, which listens on 127.0.0.1 and ::1. Both print ``ready CLIENT SERVER``
(their pids) and wait for a line on stdin. Then, for each family, the client connects,
sends :data:`SENT` bytes, reads the server's :data:`REPLY` bytes and closes first; the
server reads the request, replies, reads the end of the stream and closes (so its
socket goes CLOSE_WAIT -> LAST_ACK in its own close(2)). Then a connect to a closed
port of each family, refused. One JSON line per connection end goes to stdout (the
server's through a pipe to the client), with ``role`` active/passive/refused, ``pid``,
``family``, addresses and ports, the payload ``sent``/``received``, and the kernel's
own counters of the socket just before its close (``TCP_INFO``'s tcpi_bytes_acked and
tcpi_bytes_received, the counters the tcp source reads at the close).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import socket
import struct
import sys

SENT = 10_000
REPLY = 3_000
#: struct tcp_info (include/uapi/linux/tcp.h): tcpi_bytes_acked and tcpi_bytes_received,
#: two u64 at byte 120 (since Linux 4.1)
_INFO_AT = 120
HOSTS = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))


def _name(comm: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(15, comm.encode(), 0, 0, 0) == 0  # PR_SET_NAME


def _counters(s: socket.socket) -> tuple[int, int]:
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    acked, received = struct.unpack_from("<QQ", info, _INFO_AT)
    return acked, received


def _read(s: socket.socket, n: int) -> int:
    got = 0
    while got < n:
        chunk = s.recv(65536)
        assert chunk, "the peer closed early"
        got += len(chunk)
    return got


def _end(role: str, s: socket.socket, family: int, sent: int, received: int) -> dict[str, object]:
    laddr, lport = s.getsockname()[:2]
    raddr, rport = s.getpeername()[:2]
    acked, counted = _counters(s)
    return {"role": role, "pid": os.getpid(), "family": 6 if family == socket.AF_INET6 else 4,
            "laddr": laddr, "lport": lport, "raddr": raddr, "rport": rport, "sent": sent,
            "received": received, "acked_before_close": acked,
            "received_before_close": counted}  # fmt: skip


def serve(comm: str, listeners: list[socket.socket], out: int) -> None:
    """The server child: one connection per listener, its record to ``out``."""
    _name(comm)
    for lsock in listeners:
        conn, _ = lsock.accept()
        received = _read(conn, SENT)
        conn.sendall(b"r" * REPLY)
        assert conn.recv(1) == b"", "the client sent more than the request"
        end = _end("passive", conn, lsock.family, REPLY, received)
        conn.close()
        os.write(out, (json.dumps(end) + "\n").encode())
    os._exit(0)


def refused(family: int, host: str) -> dict[str, object]:
    """A connect to a port nobody listens on (bound and released just before)."""
    probe = socket.socket(family)
    probe.bind((host, 0))
    port = probe.getsockname()[1]
    probe.close()
    s = socket.socket(family)
    code = s.connect_ex((host, port))
    s.close()
    return {"role": "refused", "pid": os.getpid(),
            "family": 6 if family == socket.AF_INET6 else 4, "raddr": host, "rport": port,
            "errno": code}  # fmt: skip


def main(client_comm: str, server_comm: str) -> None:
    _name(client_comm)
    listeners = []
    for family, host in HOSTS:
        lsock = socket.socket(family)
        lsock.bind((host, 0))
        lsock.listen()
        listeners.append(lsock)
    rd, wr = os.pipe()
    server = os.fork()
    if server == 0:
        os.close(rd)
        serve(server_comm, listeners, wr)
    os.close(wr)
    servers = [(lsock.family, lsock.getsockname()[:2]) for lsock in listeners]
    for lsock in listeners:  # the child's copies listen
        lsock.close()
    print(f"ready {os.getpid()} {server}", flush=True)
    sys.stdin.readline()
    ends = []
    server_lines = os.fdopen(rd)
    for family, where in servers:
        s = socket.create_connection(where)
        s.sendall(b"q" * SENT)
        received = _read(s, REPLY)
        ends.append(_end("active", s, family, SENT, received))
        s.close()
        ends.append(json.loads(server_lines.readline()))  # the server closed its end
    assert os.waitpid(server, 0)[1] == 0
    for family, host in HOSTS:
        end = refused(family, host)
        assert end["errno"] == errno.ECONNREFUSED, end
        ends.append(end)
    for end in ends:
        print(json.dumps(end), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])


class Workload:
    """The script above (or ``script``, one that says ``ready CLIENT SERVER`` the same
    way and prints JSON lines) as a child of a test: started and ready (``client`` and
    ``server``: the two pids); :meth:`run` lets it work and returns its record."""

    def __init__(self, client_comm: str, server_comm: str, script: str = __file__) -> None:
        import subprocess

        self.proc = subprocess.Popen([sys.executable, script, client_comm, server_comm],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)  # fmt: skip
        assert self.proc.stdout is not None
        word, client, server = self.proc.stdout.readline().split()
        assert word == "ready"
        self.client, self.server = int(client), int(server)

    def run(self) -> list[dict[str, object]]:
        """Go; the JSON lines of every connection end (see the module doc)."""
        out, _ = self.proc.communicate("go\n", timeout=120)
        assert self.proc.returncode == 0
        return [json.loads(line) for line in out.splitlines()]

    def stop(self) -> None:
        """Kill it (by its pid) if it is still running (a failed test's cleanup)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
