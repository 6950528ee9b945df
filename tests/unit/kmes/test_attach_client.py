"""The KMES attach client and reader against real second processes (docs/kmes.md §8.4,
§11.9): a bridge killed with SIGKILL is noticed (pidfd on the SO_PEERCRED pid), and a
socket that is not listening yet (ECONNREFUSED) is retried until the client's timeout.
Before the fix the reader slept in futex_waitv forever and the client failed at once."""

from __future__ import annotations

import os
import signal
import socket
import threading
from pathlib import Path

import pytest

from ringtool.errors import KmesAttachError, KmesBridgeDiedError
from ringtool.kmes.attach import attach, exchange
from ringtool.kmes.reader import wait_any
from tests.helpers import rawproto as P
from tests.helpers.kmes import start_proc_bridge


def test_killed_bridge_is_noticed_after_the_buffer_is_drained(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    bridge = start_proc_bridge(sock, 5)
    readers = attach(str(sock))
    try:
        assert readers[0].writer_pid == bridge.pid
        bridge.send_signal(signal.SIGKILL)
        bridge.wait(10)
        # What the bridge wrote before dying is still delivered, once.
        assert [e.seq for e in readers[0].drain()] == [1, 2, 3, 4, 5]
        with pytest.raises(KmesBridgeDiedError) as exc:
            wait_any(readers, timeout=30.0)  # returned False before the fix (or hung)
        assert exc.value.pid == bridge.pid
    finally:
        for r in readers:
            r.close()
        bridge.kill()
        bridge.wait(10)


def test_refused_connection_is_retried_until_a_listener_comes(tmp_path: Path) -> None:
    path = str(tmp_path / "late.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)  # bound, not listening: connect() gets ECONNREFUSED
    with pytest.raises(KmesAttachError, match="cannot connect"):
        exchange(path, timeout=0.2)
    listening = threading.Event()

    def serve() -> None:
        listening.wait(30)
        srv.listen(1)
        conn, _ = srv.accept()
        with conn:
            assert conn.recv(64) == P.REQUEST
            meta, data = P.v2_fds(0, 4096)
            line = b'{"version": 2, "cpus": [0], "capacity": 4096, "generation": 1, '
            socket.send_fds(conn, [line + b'"fds_per_cpu": 2}\n'], [meta, data])
            os.close(meta)
            os.close(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    timer = threading.Timer(0.3, listening.set)  # the listener comes while we retry
    timer.start()
    try:
        reply = exchange(path, timeout=20.0)
        assert reply.cpus == [0] and len(reply.fds) == 2
        for fd in reply.fds:
            os.close(fd)
    finally:
        listening.set()
        t.join(10)
        srv.close()
