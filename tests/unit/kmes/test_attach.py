"""KMES attach protocol over a real UNIX socket, with reader processes."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringtool.bridge.attach_server import AttachServer
from ringtool.bridge.core import KmesBridge
from ringtool.errors import KmesAttachError
from ringtool.kmes.attach import attach, attach_fds
from tests.helpers.paths import PY, ROOT
from tests.helpers.procs import run_ringtool


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[KmesBridge]:
    b = KmesBridge([0, 1], socket_path=str(tmp_path / "run" / "kmes.sock"), capacity=1 << 16)
    b.start()
    yield b
    b.close()


def emit(b: KmesBridge, count: int, start: dict[int, int]) -> None:
    """``count`` events alternating CPUs; payload = the seq it will get (8 bytes LE)."""
    for i in range(count):
        cpu = i % 2
        start[cpu] += 1
        b.submit(cpu, 1, 9, start[cpu].to_bytes(8, "little"))
        if i % 64 == 63:
            b.flush()
    b.flush()


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "tests.unit.kmes_proc", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_attached(p: subprocess.Popen[str]) -> None:
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line == "attached\n", (line, p.stderr.read() if p.stderr else "")


def result(p: subprocess.Popen[str]) -> dict[str, object]:
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def test_socket_mode_and_reply(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    assert stat.S_IMODE(os.stat(bridge.socket_path).st_mode) == 0o660
    reply, fds = attach_fds(bridge.socket_path)
    assert reply == {
        "version": 2, "cpus": [0, 1], "capacity": 1 << 16, "generation": 1, "fds_per_cpu": 2
    }  # fmt: skip
    assert len(fds) == 4  # meta0, data0, meta1, data1
    for i, fd in enumerate(fds):
        assert os.fstat(fd).st_size == (4096 if i % 2 == 0 else 1 << 16)
        os.close(fd)


def test_raw_exchange_one_line_and_fds(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(bridge.socket_path)
        s.sendall(b"ATTACH\n")
        msg, fds, _flags, _addr = socket.recv_fds(s, 4096, 16)
        assert msg.endswith(b"\n") and msg.count(b"\n") == 1 and len(fds) == 4
        for fd in fds:
            os.close(fd)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(bridge.socket_path)
        s.sendall(b"HELLO\n")
        msg, fds, _flags, _addr = socket.recv_fds(s, 4096, 16)
        assert b"error" in msg and fds == []


def test_silent_client_does_not_block_others(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(bridge.socket_path)  # connects, never sends ATTACH
        t0 = time.monotonic()
        _reply, fds = attach_fds(bridge.socket_path)
        assert time.monotonic() - t0 < 1.5  # not queued behind the 2 s timeout
        for fd in fds:
            os.close(fd)


def test_reader_process_and_cli(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    emit(bridge, 200, {0: 0, 1: 0})
    res = result(child("read", bridge.socket_path, "200", "20"))
    assert res["seqs"] == {"0": list(range(1, 101)), "1": list(range(1, 101))}
    assert res["ok"] is True
    cli = run_ringtool("kmes-read", "--json", "--socket", bridge.socket_path)
    assert cli.returncode == 0, cli.stderr
    lines = [json.loads(x) for x in cli.stdout.splitlines()]
    assert len(lines) == 200
    assert lines[0]["origin"] == "ringbuf" and lines[0]["type"] == 9 and "payload_hex" in lines[0]
    assert "lapped 0 times" in cli.stderr


def test_two_sleeping_reader_processes_woken_and_resize(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    procs = [child("read", bridge.socket_path, "3000", "30") for _ in range(2)]
    for p in procs:
        wait_attached(p)
    time.sleep(0.2)  # both asleep in futex_waitv
    seq = {0: 0, 1: 0}
    emit(bridge, 1000, seq)
    time.sleep(0.1)
    bridge.resize(1 << 17)  # generation swap with readers attached
    emit(bridge, 1000, seq)
    bridge.resize(1 << 16)  # shrink: 1500 events x 40 bytes per CPU still fit
    emit(bridge, 1000, seq)
    for p in procs:
        res = result(p)
        assert res["seqs"] == {"0": list(range(1, 1501)), "1": list(range(1, 1501))}
        assert res["ok"] is True
        assert res["stats"] == {"0": [0, 0, 3], "1": [0, 0, 3]}


def test_idle_reader_uses_no_cpu(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    p = child("idle", bridge.socket_path, "1.0")
    wait_attached(p)
    res = result(p)
    assert isinstance(res["cpu"], float) and res["cpu"] < 0.05  # < 5% of one CPU


def test_scribbler_process_does_not_disturb_writer(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    good = child("until", bridge.socket_path, "3000", "30")
    wait_attached(good)
    evil = child("scribble", bridge.socket_path, "1.0")
    wait_attached(evil)
    seq = {0: 0, 1: 0}
    for _ in range(40):  # 2000 events per CPU while the scribbler runs
        emit(bridge, 100, seq)
        time.sleep(0.01)
    assert result(evil)["scribbles"]  # it did scribble
    emit(bridge, 2000, seq)  # the writer keeps going after the scribbler is gone
    assert seq == {0: 3000, 1: 3000}
    res = result(good)
    for cpu in ("0", "1"):
        seqs = res["seqs"][cpu]  # type: ignore[index]
        assert seqs == sorted(set(seqs)) and seqs[-1] == 3000  # order kept, no duplicate
        assert set(range(2001, 3001)) <= set(seqs)  # nothing lost once it stopped
    assert res["ok"] is True
    stats = bridge.stats()
    assert stats[0]["last_seq"] == 3000 and stats[1]["last_seq"] == 3000
    assert stats[0]["written"] == 3000 and stats[1]["written"] == 3000


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_peer_not_in_group_refused() -> None:
    d = tempfile.mkdtemp(prefix="kmes-peer-")
    os.chmod(d, 0o755)
    b = KmesBridge([0], socket_path=os.path.join(d, "kmes.sock"), capacity=4096)
    b.start()
    assert b.socket_path is not None
    os.chmod(b.socket_path, 0o666)  # let the connect through: SO_PEERCRED decides
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become nobody, try to attach
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(b.socket_path)
                s.sendall(b"ATTACH\n")
                msg, fds, _f, _a = socket.recv_fds(s, 4096, 16)
                os.write(w, msg + f"fds={len(fds)}".encode())
        except BaseException as exc:
            os.write(w, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 4096)
    os.waitpid(pid, 0)
    os.close(r)
    b.close()
    os.rmdir(d)
    assert b"permission denied" in got and got.endswith(b"fds=0"), got
    assert b._server is None


def test_no_socket_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KmesAttachError, match="no KMES bridge socket"):
        attach(str(tmp_path / "none.sock"))
    cli = run_ringtool("kmes-read", "--socket", str(tmp_path / "none.sock"))
    assert cli.returncode == 1
    assert cli.stderr.startswith("ringtool kmes-read: no KMES bridge socket")
    assert "Traceback" not in cli.stderr and cli.stderr.count("\n") == 1


def test_stale_socket_replaced_live_one_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "k.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # a socket file with no listener
    b = KmesBridge([0], socket_path=path, capacity=4096)
    b.start()
    with pytest.raises(KmesAttachError, match="another KMES bridge"):
        AttachServer(path, b._provide)
    b.close()
    assert not os.path.exists(path)
