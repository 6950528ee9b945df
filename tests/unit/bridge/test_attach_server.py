"""KMES attach server (protocol v2) and the bridge against hostile consumers.

The wire protocol is spoken by hand (tests/helpers/rawproto.py, strict), so these tests
check the server alone; the hostile consumer is a real second process
(tests/unit/kmes_hostile_proc.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringtool.bridge.attach_server import FD_CHUNK, AttachServer
from ringtool.bridge.core import KmesBridge
from ringtool.errors import KmesFormatError
from ringtool.kmes import layout as L
from ringtool.kmes.attach_protocol import AttachInfo
from ringtool.kmes.buffer import KmesBuffer, MappedBuffer
from ringtool.kmes.reader import Reader
from tests.helpers.paths import ROOT
from tests.helpers.rawproto import raw_attach


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[KmesBridge]:
    b = KmesBridge(
        [0, 1], socket_path=str(tmp_path / "k.sock"), capacity=1 << 16,
        config_path=tmp_path / "kmes.conf",
    )  # fmt: skip
    b.start()
    yield b
    b.close()


def test_reply_is_v2_with_a_read_only_data_fd_per_cpu(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    reply, fds, messages = raw_attach(bridge.socket_path, timeout=10.0, strict=True)
    try:
        assert reply == {
            "version": 2, "cpus": [0, 1], "capacity": 1 << 16, "generation": 1,
            "fds_per_cpu": 2,
        }  # fmt: skip
        assert len(fds) == 4 and messages == 1
        for meta_fd, data_fd in zip(fds[0::2], fds[1::2], strict=True):
            assert os.fstat(meta_fd).st_size == 4096
            assert os.fstat(data_fd).st_size == 1 << 16
            assert os.get_blocking(meta_fd)  # plain descriptors
            import fcntl

            assert fcntl.fcntl(meta_fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR
            assert fcntl.fcntl(data_fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    finally:
        for fd in fds:
            os.close(fd)


def test_300_cpus_need_several_messages(tmp_path: Path) -> None:
    """One SCM_RIGHTS message carries at most 253 descriptors: 600 go in chunks of
    FD_CHUNK, in order (each fake descriptor is a memfd whose size is its index)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    cpus = list(range(300))

    def provide() -> AttachInfo:
        fds = []
        for i in range(2 * len(cpus)):
            fd = os.memfd_create(f"fake{i}", os.MFD_CLOEXEC)
            os.ftruncate(fd, i + 1)
            fds.append(fd)
        return AttachInfo(cpus, fds, 4096, 7)

    server = AttachServer(str(tmp_path / "many.sock"), provide)
    server.start()
    try:
        reply, fds, messages = raw_attach(str(tmp_path / "many.sock"), timeout=10.0, strict=True)
        try:
            assert reply["cpus"] == cpus and reply["fds_per_cpu"] == 2
            assert len(fds) == 600 and messages == -(-600 // FD_CHUNK) == 3
            assert [os.fstat(fd).st_size for fd in fds] == list(range(1, 601))
        finally:
            for fd in fds:
                os.close(fd)
    finally:
        server.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_200_concurrent_attaches_all_succeed_without_retry(bridge: KmesBridge) -> None:
    """The listen backlog holds them all (it was 64: 11 of 200 failed with EAGAIN)."""
    assert bridge.socket_path is not None
    path = bridge.socket_path
    n = 200
    gate = threading.Barrier(n)
    errors: list[str] = []
    got: list[int] = []

    def one() -> None:
        try:
            gate.wait(30)
            _reply, fds, _ = raw_attach(path, timeout=60, strict=True)
            got.append(len(fds))
            for fd in fds:
                os.close(fd)
        except Exception as exc:  # collected, asserted below
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and got == [4] * n


def test_silent_clients_are_capped_and_timed_out(bridge: KmesBridge) -> None:
    """40 clients that connect and say nothing (no thread each; no slot to wait for):
    each is dropped after its deadline, and an honest consumer is still served."""
    assert bridge.socket_path is not None and bridge._server is not None
    silent = []
    for _ in range(40):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(bridge.socket_path)
        silent.append(s)
    reply, fds, _ = raw_attach(bridge.socket_path, timeout=60, strict=True)
    assert reply["version"] == 2 and len(fds) == 4
    for fd in fds:
        os.close(fd)
    for s in silent:
        s.settimeout(60)
        assert s.recv(1) == b""  # the server hung up on it
        s.close()
    assert bridge._server.failed >= 40


def test_peer_gone_before_the_reply_costs_the_server_nothing(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    for _ in range(100):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(bridge.socket_path)
        s.sendall(b"ATTACH\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        s.close()  # reset: the server's send gets EPIPE/ECONNRESET
    reply, fds, _ = raw_attach(bridge.socket_path, timeout=30, strict=True)
    assert len(fds) == 4 and reply["version"] == 2
    for fd in fds:
        os.close(fd)


def test_scribbled_static_fields_on_idle_bridge_do_not_block_attach(bridge: KmesBridge) -> None:
    import mmap

    assert bridge.socket_path is not None
    _reply, fds, _ = raw_attach(bridge.socket_path, timeout=10.0, strict=True)
    for meta_fd in fds[0::2]:
        m = mmap.mmap(meta_fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        m[0:64] = b"\xff" * 64  # magic, version, cpu_id, capacity, data_offset, generation
        m.close()
    for fd in fds:
        os.close(fd)
    # no event written in between:
    _reply, fds, _ = raw_attach(bridge.socket_path, timeout=10.0, strict=True)
    maps = [MappedBuffer(m, d) for m, d in zip(fds[0::2], fds[1::2], strict=True)]
    assert [(b.cpu, b.capacity, b.generation()) for b in maps] == [(0, 1 << 16, 1), (1, 1 << 16, 1)]
    for b in maps:
        b.close()


def test_mapped_buffer_refuses_a_writable_data_fd_and_wrong_sizes() -> None:
    buf = KmesBuffer(0, 1 << 12)
    try:
        meta, data = buf.consumer_fds()
        writable = os.open(f"/proc/self/fd/{data}", os.O_RDWR)  # (opens; can't write)
        os.close(data)
        with pytest.raises(KmesFormatError, match="writable"):
            MappedBuffer(meta, writable)
        for fd in (meta, writable):  # both closed on failure
            with pytest.raises(OSError):
                os.fstat(fd)
        meta, data = buf.consumer_fds()
        other = KmesBuffer(0, 1 << 13)
        meta2, data2 = other.consumer_fds()
        os.close(meta2)
        with pytest.raises(KmesFormatError, match="8192 bytes"):
            MappedBuffer(meta, data2)  # data of another capacity
        os.close(data)
        other.close()
    finally:
        buf.close()


def test_hostile_consumer_cannot_crash_the_bridge_or_shift_seq(tmp_path: Path) -> None:
    """Item 4: a second process scribbles every metadata field (write_pos = tail_pos =
    2**64-1, ...) and tries to write the data region while the bridge writes and is
    resized by SIGHUP twice. The bridge keeps running, no write into the data region
    works, its numbering is not shifted, and an honest reader sees each seq at most once,
    in order, up to the last one, with every seq it did not return counted."""
    conf = tmp_path / "kmes.conf"
    b = KmesBridge([0, 1], socket_path=str(tmp_path / "k.sock"), config_path=conf)
    conf.write_text("capacity = 64K\n")
    b.start()
    old = signal.signal(signal.SIGHUP, b.request_reload)
    readers: list[Reader] = []
    hostile: subprocess.Popen[str] | None = None
    try:
        reply, fds, _ = raw_attach(str(tmp_path / "k.sock"), timeout=10.0, strict=True)

        def again(cpu: int) -> tuple[int, int, int]:
            r, f, _ = raw_attach(str(tmp_path / "k.sock"), timeout=10.0, strict=True)
            i = r["cpus"].index(cpu)
            for j, fd in enumerate(f):
                if j // 2 != i:
                    os.close(fd)
            return f[2 * i], f[2 * i + 1], int(r["generation"])

        readers = [
            Reader(m, d, generation=reply["generation"], reattach=again)
            for m, d in zip(fds[0::2], fds[1::2], strict=True)
        ]
        hostile = subprocess.Popen(
            [sys.executable, "-m", "tests.unit.kmes_hostile_proc", str(tmp_path / "k.sock"), "3"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert hostile.stdout is not None
        assert hostile.stdout.readline().strip() == "scribbling"
        seqs: dict[int, list[int]] = {0: [], 1: []}
        sent = 0
        resizes = [(200, "capacity = 128K\n"), (400, "capacity = 32K\n")]
        while hostile.poll() is None or sent < 600:
            for cpu in (0, 1):
                b.submit(cpu, L.ORIGIN_BRIDGE, 1, (sent + 1).to_bytes(8, "little"))
            sent += 1
            b.flush()
            if resizes and sent == resizes[0][0]:
                conf.write_text(resizes.pop(0)[1])
                os.kill(os.getpid(), signal.SIGHUP)
            b.service()  # the bridge's loop: re-store static fields, do the reload
            for r in readers:
                seqs[r.cpu].extend(e.seq for e in r.drain())
            time.sleep(0.002)
        out = json.loads(hostile.stdout.readline())
        b.service()  # (the hostile process has stopped scribbling)
        b.submit(0, L.ORIGIN_BRIDGE, 1, b"last")
        b.submit(1, L.ORIGIN_BRIDGE, 1, b"last")
        b.flush()
        for r in readers:
            while evs := r.drain():
                seqs[r.cpu].extend(e.seq for e in evs)
        assert out["breaches"] == [] and out["scribbles"] > 100
        assert not resizes and b.capacity == 32 << 10
        for cpu in (0, 1):
            assert b.writers[cpu].last_seq == sent + 1  # nothing shifted the numbering
            got, st = seqs[cpu], readers[cpu].stats
            # every seq once, in order; any the reader skipped (a forged tail_pos can
            # look like a lap) is counted, never silently missing
            assert got == sorted(set(got)) and got[-1] == sent + 1, (st, got[-5:], sent, len(got))
            assert sent + 1 - len(got) <= st.lapped_events + st.gap_events, st
    finally:
        signal.signal(signal.SIGHUP, old)
        if hostile is not None:
            hostile.kill()
            hostile.wait()
        for r in readers:
            r.close()
        b.close()
