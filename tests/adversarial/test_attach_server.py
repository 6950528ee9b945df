"""The attach server of a real ``ringtool bridge`` under load and abuse (docs/kmes.md
section 11): the v2 reply and its descriptors, 200 concurrent attaches, silent and partial
clients, garbage, and a scribbled magic on an idle bridge."""

from __future__ import annotations

import fcntl
import mmap
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringtool.kmes.attach import attach, attach_fds
from tests.helpers import rawproto as P
from tests.helpers.kmes import Bridge, bridge

pytestmark = [pytest.mark.adversarial, pytest.mark.kernel]

CAP = 1 << 16


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridge]:
    with bridge(tmp_path_factory.mktemp("adv-server"), capacity=CAP) as b:
        yield b


def test_v2_reply_and_descriptors(served: Bridge) -> None:
    r = P.raw_attach(str(served.sock))
    try:
        reply = r.reply
        assert reply.get("version") == 2 and reply.get("fds_per_cpu") == 2, reply
        assert reply["capacity"] == CAP and isinstance(reply["generation"], int), reply
        assert len(r.fds) == 2 * len(reply["cpus"]) > 0
        for cpu, (meta, data) in zip(reply["cpus"], P.pairs(r), strict=True):
            assert os.fstat(meta).st_size == P.PAGE
            assert os.fstat(data).st_size == CAP
            assert fcntl.fcntl(meta, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR
            assert fcntl.fcntl(data, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
            for fd in (meta, data):
                seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
                assert seals & (P.F_SEAL_SHRINK | P.F_SEAL_GROW) == P.F_SEAL_SHRINK | P.F_SEAL_GROW
            static = P.STATIC.unpack(os.pread(meta, P.STATIC.size, 0))
            assert static[0] == b"KMESRING" and static[2] == cpu and static[4] == CAP, static
            with pytest.raises(PermissionError):
                mmap.mmap(data, CAP, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            m = mmap.mmap(meta, P.PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            m.close()  # consumers own need_wake: the metadata page maps read-write
    finally:
        r.close()


def test_data_fd_cannot_be_reopened_writable(served: Bridge) -> None:
    """Opening the data fd read-only is not enough: /proc/self/fd/N re-opens the memfd
    with the inode's permissions (0777 for a memfd). Writing must still be impossible
    (F_SEAL_FUTURE_WRITE after the writer mapped it does that)."""
    r = P.raw_attach(str(served.sock))
    try:
        for _meta, data in P.pairs(r):
            try:
                rw = os.open(f"/proc/self/fd/{data}", os.O_RDWR)
            except OSError:
                continue  # refused: fine
            try:
                head = os.pread(rw, 8, 0)
                with pytest.raises(OSError):
                    os.pwrite(rw, head, 0)
                with pytest.raises(OSError):
                    mmap.mmap(rw, CAP, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                os.close(rw)
    finally:
        r.close()


def test_200_concurrent_attaches_all_succeed(served: Bridge) -> None:
    n = 200
    gate = threading.Barrier(n)
    errors: list[str] = []
    counts: list[int] = []

    def one() -> None:
        try:
            gate.wait(10)
            reply, fds = attach_fds(str(served.sock), timeout=10.0)
            counts.append(len(fds) - 2 * len(reply["cpus"]))  # type: ignore[arg-type]
            for fd in fds:
                os.close(fd)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, f"{len(errors)} of {n} attaches failed, e.g. {errors[:3]}"
    assert counts == [0] * n


def _silent(path: str, n: int) -> list[socket.socket]:
    held = []
    for _ in range(n):
        try:
            held.append(P.connect(path, timeout=2.0))
        except OSError:
            pass
    return held


def _closed_within(socks: list[socket.socket], timeout: float) -> int:
    """How many of ``socks`` the bridge closed within ``timeout`` s."""
    end = time.monotonic() + timeout
    left = list(socks)
    for s in left:
        s.setblocking(False)
    while left and time.monotonic() < end:
        still = []
        for s in left:
            try:
                if s.recv(64) == b"":
                    continue
            except BlockingIOError:
                still.append(s)
                continue
            except OSError:
                continue
        left = still
        time.sleep(0.05)
    return len(socks) - len(left)


def test_silent_clients_do_not_block_others_and_are_timed_out(served: Bridge) -> None:
    path = str(served.sock)
    held = _silent(path, 300)
    try:
        assert len(held) >= 250, f"only {len(held)} silent connections got in"
        t0 = time.monotonic()
        readers = attach(path, timeout=5.0)
        for r in readers:
            r.close()
        took = time.monotonic() - t0
        closed = _closed_within(held, 15.0)
        assert closed == len(held), (
            f"{len(held) - closed} of {len(held)} silent connections still open after 15 s "
            f"(attach took {took:.1f} s)"
        )
    finally:
        for s in held:
            s.close()


@pytest.mark.parametrize(
    "request_bytes",
    [b"ATT", b"A" * (1 << 20), b"\xff\x00garbage\n", b"attach\n", b"ATTACH \n", b"\n"],
    ids=["partial", "huge-no-newline", "garbage", "lowercase", "trailing-space", "empty-line"],
)
def test_bad_requests_get_no_descriptors_and_do_not_block(
    served: Bridge, request_bytes: bytes
) -> None:
    path = str(served.sock)
    bad = P.connect(path)
    try:
        try:
            bad.sendall(request_bytes)
        except OSError:
            pass  # the bridge may hang up on a huge line
        readers = attach(path, timeout=5.0)  # others are served meanwhile
        for r in readers:
            r.close()
        bad.settimeout(15.0)
        try:
            _msg, fds, _f, _a = socket.recv_fds(bad, 4096, 253)
        except OSError:
            fds = []
        for fd in fds:
            os.close(fd)
        assert fds == [], f"{len(fds)} descriptors for {request_bytes[:20]!r}"
    finally:
        bad.close()


def test_scribbled_static_fields_on_idle_bridge_do_not_block_attach(served: Bridge) -> None:
    """A consumer zeroes magic/version/capacity/data_offset of every metadata page; the
    next consumer still attaches (the bridge restores static fields before answering)."""
    path = str(served.sock)
    r = P.raw_attach(path)
    maps = []
    try:
        for meta, _data in P.pairs(r):
            maps.append(mmap.mmap(meta, P.PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
        for _ in range(5):
            for m in maps:
                m[0:32] = bytes(32)  # magic, version, cpu_id, capacity, data_offset
            readers = attach(path, timeout=5.0)
            try:
                assert [x.capacity for x in readers] == [CAP] * len(maps)
                assert [x.cpu for x in readers] == r.reply["cpus"]
            finally:
                for x in readers:
                    x.close()
    finally:
        for m in maps:
            m.close()
        r.close()
    assert served.alive()


@pytest.mark.parametrize("request_bytes", [b"ATTACH\n", b"garbage\n"], ids=["attach", "garbage"])
def test_clients_that_hang_up_before_the_reply_do_not_kill_the_bridge(
    served: Bridge, request_bytes: bytes
) -> None:
    """Ask, then close without reading: the reply goes to a closed peer (EPIPE; with
    SIGPIPE at its default action that would kill the bridge)."""
    for _ in range(300):
        if not served.alive():
            break
        s = P.connect(str(served.sock))
        s.sendall(request_bytes)
        s.close()
    r = P.raw_attach(str(served.sock))
    r.close()
    assert served.alive(), f"bridge died: rc {served.proc.returncode}"


def test_bridge_survives_the_module(served: Bridge, tmp_path: Path) -> None:
    """After every test above, the same bridge still answers (it never died)."""
    assert served.alive(), served.stderr_text()
    r = P.raw_attach(str(served.sock))
    r.close()
    assert r.reply.get("version") == 2
