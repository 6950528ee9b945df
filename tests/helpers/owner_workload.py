"""A TCP exchange of known message sizes between two named processes, for the tests of
packets that name their connection's process (docs/trace.md, "Packets and their
processes").

Run as a script (``python owner_workload.py CLIENT_COMM SERVER_COMM``; it imports
nothing of ringtool): the process names itself CLIENT_COMM and forks a server child
named SERVER_COMM running as uid/gid :data:`SERVER_UID`, which listens on 127.0.0.1
and ::1. Before it says ``ready CLIENT SERVER`` (the two pids) the client opens one
connection to the IPv4 listener (an *old* one: it exists before the trace). On a
line on stdin, for each family, the client connects and the two exchange the
messages of :data:`MESSAGES` in turn (client first; each side reads the whole message
before it sends its next), then the client closes first and the server reads the end
and closes. Then the old connection carries :data:`OLD_SIZE` bytes each way, and the
client sends one UDP datagram of :data:`UDP_SIZE` bytes to the server's port number
on 127.0.0.1. One JSON line per connection goes to stdout: ``family``, the client's
``cport`` and the server's ``sport`` (``old`` true for the old one).
A test runs it with :class:`tests.helpers.tcp_workload.Workload` (``script`` this file).
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys

#: The payload of each message, in turn: client, server, client, server.
MESSAGES = (500, 700, 900, 1100)
OLD_SIZE = 1300
UDP_SIZE = 1500
SERVER_UID = 65534  # nobody
HOSTS = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))


def _name(comm: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(15, comm.encode(), 0, 0, 0) == 0  # PR_SET_NAME


def _read(s: socket.socket, n: int) -> None:
    got = 0
    while got < n:
        chunk = s.recv(n - got)
        assert chunk, "the peer closed early"
        got += len(chunk)


def _talk(s: socket.socket, first: bool) -> None:
    """The messages of :data:`MESSAGES` on ``s``: the client's (``first``) sent, the
    others read."""
    for i, size in enumerate(MESSAGES):
        if (i % 2 == 0) == first:
            s.sendall(b"m" * size)
        else:
            _read(s, size)


def serve(comm: str, listeners: list[socket.socket], old: socket.socket) -> None:
    """The server child: the old connection's bytes, one exchange per listener."""
    _name(comm)
    os.setgid(SERVER_UID)
    os.setuid(SERVER_UID)
    for lsock in listeners:
        conn, _ = lsock.accept()
        _talk(conn, first=False)
        assert conn.recv(1) == b"", "the client sent more than its messages"
        conn.close()
    _read(old, OLD_SIZE)
    old.sendall(b"o" * OLD_SIZE)
    old.close()
    os._exit(0)


def main(client_comm: str, server_comm: str) -> None:
    _name(client_comm)
    listeners = []
    for family, host in HOSTS:
        lsock = socket.socket(family)
        lsock.bind((host, 0))
        lsock.listen()
        listeners.append(lsock)
    old = socket.create_connection(listeners[0].getsockname()[:2])
    old_server, _ = listeners[0].accept()
    server = os.fork()
    if server == 0:
        old.close()
        serve(server_comm, listeners, old_server)
    old_server.close()
    where = [lsock.getsockname()[:2] for lsock in listeners]
    for lsock in listeners:  # the child's copies listen
        lsock.close()
    print(f"ready {os.getpid()} {server}", flush=True)
    sys.stdin.readline()
    for (family, _), at in zip(HOSTS, where, strict=True):
        s = socket.create_connection(at)
        _talk(s, first=True)
        line = {"family": 6 if family == socket.AF_INET6 else 4, "cport": s.getsockname()[1],
                "sport": at[1], "old": False}  # fmt: skip
        s.close()
        print(json.dumps(line), flush=True)
    old.sendall(b"o" * OLD_SIZE)
    _read(old, OLD_SIZE)
    print(json.dumps({"family": 4, "cport": old.getsockname()[1], "sport": where[0][1],
                      "old": True}), flush=True)  # fmt: skip
    old.close()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(b"u" * UDP_SIZE, ("127.0.0.1", where[0][1]))
    assert os.waitpid(server, 0)[1] == 0


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
