"""Two processes with a TCP connection that stays open, for the tcp source's live
counters: ``python -m tests.helpers.tcp_hold CLIENT_COMM SERVER_COMM`` names itself
CLIENT_COMM and forks a server child named SERVER_COMM listening on 127.0.0.1; the
client connects, sends :data:`~tests.helpers.tcp_workload.SENT` bytes, the server
reads them and replies :data:`~tests.helpers.tcp_workload.REPLY`, the client reads
the reply. Then it prints ``open CLIENT SERVER LPORT RPORT`` (the pids, the client's
local port and the server's) and both keep the connection open until a line comes on
stdin; then they close it (client first) and exit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.helpers.tcp_workload import REPLY, SENT, _name, _read


def main(client_comm: str, server_comm: str) -> None:
    _name(client_comm)
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen()
    server = os.fork()
    if server == 0:
        _name(server_comm)
        conn, _ = lsock.accept()
        _read(conn, SENT)
        conn.sendall(b"r" * REPLY)
        conn.recv(1)  # until the client closes
        conn.close()
        os._exit(0)
    s = socket.create_connection(lsock.getsockname()[:2])
    lsock.close()
    s.sendall(b"q" * SENT)
    _read(s, REPLY)
    print(f"open {os.getpid()} {server} {s.getsockname()[1]} {s.getpeername()[1]}", flush=True)
    sys.stdin.readline()
    s.close()
    os.waitpid(server, 0)


class HeldConnection:
    """The script as a child: started, its connection open (``client``, ``server``:
    the pids; ``lport``, ``rport``: the client's and the server's port);
    :meth:`close` ends it."""

    def __init__(self, client_comm: str, server_comm: str) -> None:
        from tests.helpers.paths import PY, ROOT

        self.proc = subprocess.Popen([PY, "-m", "tests.helpers.tcp_hold", client_comm,
                                      server_comm], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout is not None
        word, *nums = self.proc.stdout.readline().split()
        assert word == "open", word
        self.client, self.server, self.lport, self.rport = map(int, nums)

    def close(self) -> None:
        """Close the connection and wait for both processes (kill them if stuck)."""
        try:
            self.proc.communicate("done\n", timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
