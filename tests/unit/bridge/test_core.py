"""KMES bridge core: boot buffer, resize / generation swap, config reload."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ringtool.bridge.core import KmesBridge
from ringtool.errors import KmesCapacityError, KmesError
from ringtool.kmes import layout as L
from ringtool.kmes.boot import BootBuffer
from ringtool.kmes.buffer import KmesBuffer
from ringtool.kmes.reader import Reader
from ringtool.kmes.writer import Writer
from tests.helpers.kmes import drain_all


def pairs(fds: list[int]) -> list[tuple[int, int]]:
    """(meta, data) per CPU from an AttachInfo's fds (meta0, data0, meta1, ...)."""
    return list(zip(fds[0::2], fds[1::2], strict=True))


def reattach_from(bridge: KmesBridge) -> Callable[[int], tuple[int, int, int]]:
    def again(cpu: int) -> tuple[int, int, int]:
        info = bridge._provide()
        mine = (-1, -1)
        for c, pair in zip(info.cpus, pairs(info.fds), strict=True):
            if c == cpu:
                mine = pair
            else:
                os.close(pair[0])
                os.close(pair[1])
        return mine[0], mine[1], info.generation

    return again


def readers_of(bridge: KmesBridge) -> list[Reader]:
    info = bridge._provide()
    again = reattach_from(bridge)
    return [Reader(m, d, generation=info.generation, reattach=again) for m, d in pairs(info.fds)]


def test_reader_notices_a_buffer_retired_before_it_was_mapped() -> None:
    b = KmesBridge([0], socket_path=None, capacity=1 << 14)
    b.start()
    info = b._provide()  # handed out at generation 1...
    for _ in range(5):
        b.submit(0, 1, 1, b"x")
    b.flush()
    b.resize(1 << 15)  # ...and retired (bumped to 2) before the reader maps it
    b.submit(0, 1, 1, b"y")
    b.flush()
    r = Reader(*info.fds, generation=info.generation, reattach=reattach_from(b))
    seqs = [e.seq for e in drain_all(r)]
    assert seqs == [1, 2, 3, 4, 5, 6] and r.generation == 2
    r.close()
    b.close()


def test_boot_buffer_overwrites_and_flushes() -> None:
    boot = BootBuffer(1, capacity=1024)
    for i in range(1, 41):
        boot.write(5, bytes([i]) * 24)  # 56 bytes each: only 18 survive in 1 KiB
    assert boot.write(5, b"x" * 600) == 41  # > 50%: dropped, seq consumed
    assert boot.stats.overwritten == 22 and boot.stats.dropped == 1 and len(boot) == 18
    buf = KmesBuffer(1, 4096)
    w = Writer(buf, next_seq=boot.last_seq + 1)
    assert boot.flush_into(w) == 18 and len(boot) == 0
    w.write(5, b"after")
    r = Reader(*buf.consumer_fds())
    evs = drain_all(r)
    assert [e.seq for e in evs] == [*range(23, 41), 42]
    assert all(e.cpu_id == 1 for e in evs) and evs[0].payload == bytes([23]) * 24
    r.close()
    buf.close()


def test_bridge_boot_then_start(tmp_path: Path) -> None:
    conf = tmp_path / "kmes.conf"
    conf.write_text("capacity = 8192\n")
    b = KmesBridge([0, 1], socket_path=None, config_path=conf, possible=[0, 1])
    for i in range(10):
        b.submit(i % 2, L.ORIGIN_RINGBUF, 4, b"boot%d" % i)
    b.submit(7, L.ORIGIN_RINGBUF, 4, b"no such cpu")
    assert b.flush() == 10 and b.unknown_cpu == 1
    b.start()
    assert b.capacity == 8192
    for i in range(4):
        b.submit(i % 2, L.ORIGIN_PERF, 4, b"live%d" % i)
    b.flush()
    rs = readers_of(b)
    got = {r.cpu: [(e.seq, e.payload) for e in drain_all(r)] for r in rs}
    assert got[0] == [
        (1, b"boot0"),
        (2, b"boot2"),
        (3, b"boot4"),
        (4, b"boot6"),
        (5, b"boot8"),
        (6, b"live0"),
        (7, b"live2"),
    ]
    assert [s for s, _ in got[1]] == list(range(1, 8))
    for r in rs:
        r.close()
    b.close()


@pytest.mark.parametrize("new_cap", [1 << 16, 1 << 12])
def test_resize_with_attached_readers_no_loss_no_dup(new_cap: int) -> None:
    b = KmesBridge([0, 1], socket_path=None, capacity=1 << 14)
    b.start()
    rs = readers_of(b)
    got: dict[int, list[int]] = {0: [], 1: []}
    for i in range(60):
        b.submit(i % 2, 1, 1, b"a" * 8)
    b.flush()
    for r in rs:  # read part of it before the resize
        got[r.cpu] += [e.seq for e in r.drain(10)]
    b.resize(new_cap)
    assert all(buf.private_generation == 2 for buf in b.buffers.values())
    for i in range(40):
        b.submit(i % 2, 1, 1, b"b" * 8)
    b.flush()
    for r in rs:
        got[r.cpu] += [e.seq for e in drain_all(r)]
        assert r.generation == 2 and r.stats.generations == 1
        assert r.capacity == new_cap
        assert r.stats.lapped_events == 0 and r.stats.gap_events == 0
    assert got[0] == list(range(1, 51)) and got[1] == list(range(1, 51))
    for r in rs:
        r.close()
    b.close()


def test_resize_while_writing_concurrently() -> None:
    b = KmesBridge([0], socket_path=None, capacity=1 << 20)
    b.start()
    (r,) = readers_of(b)
    stop = threading.Event()
    total = [0]

    def produce() -> None:
        n = 0
        while not stop.is_set() or n < 20000:
            while n - len(seqs) > 5000:  # stay within the smallest buffer: no lapping
                time.sleep(0.0005)
            for _ in range(50):
                b.submit(0, 1, 1, n.to_bytes(8, "little"))
                n += 1
            b.flush()
        total[0] = n

    seqs: list[int] = []
    t = threading.Thread(target=produce)
    t.start()
    caps = [1 << 19, 1 << 21, 1 << 20]
    while t.is_alive():
        evs = r.drain()
        seqs += [e.seq for e in evs]
        assert all(int.from_bytes(e.payload, "little") == e.seq - 1 for e in evs)
        if caps and len(seqs) > 3000 * (4 - len(caps)):
            b.resize(caps.pop(0))  # the bridge serialises resize with flush
        if not caps:
            stop.set()
    seqs += [e.seq for e in drain_all(r)]
    assert seqs == list(range(1, total[0] + 1))
    assert r.generation == 4 and 1 <= r.stats.generations <= 3
    assert r.stats.lapped_events == r.stats.gap_events == r.stats.laps == 0
    r.close()
    b.close()


def test_reader_without_reattach_raises_on_resize() -> None:
    b = KmesBridge([0], socket_path=None, capacity=1 << 14)
    b.start()
    r = Reader(*b._provide().fds)
    b.resize(1 << 15)
    with pytest.raises(KmesError, match="resized"):
        r.drain()
    r.close()
    b.close()


def test_sighup_reload(tmp_path: Path) -> None:
    conf = tmp_path / "kmes.conf"
    conf.write_text("capacity = 16384\n")
    b = KmesBridge([0], socket_path=None, config_path=conf)
    b.start()
    old = signal.getsignal(signal.SIGHUP)
    try:
        b.install_signal_handlers()
        assert b.service() is False
        conf.write_text("capacity = 32768\n")
        os.kill(os.getpid(), signal.SIGHUP)
        assert b.service() is True and b.capacity == 32768
        conf.write_text("capacity = 1000\n")
        os.kill(os.getpid(), signal.SIGHUP)
        with pytest.raises(KmesCapacityError):
            b.service()
        assert b.capacity == 32768  # a bad config keeps the running buffers
    finally:
        signal.signal(signal.SIGHUP, old)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        b.close()


def test_switch_into_lapped_buffer_counts_lost_as_lapped() -> None:
    b = KmesBridge([0], socket_path=None, capacity=1 << 14)
    b.start()
    (r,) = readers_of(b)

    def emit(n: int) -> None:
        for _ in range(n):
            b.submit(0, 1, 1, b"z" * 8)  # 40-byte events
        b.flush()

    emit(300)
    first = r.drain(10)
    b.resize(1 << 16)
    emit(2000)  # generation 2 laps itself while the reader is still on generation 1
    b.resize(4096)  # generation 3 keeps the newest 4096 bytes: 102 events
    rest = drain_all(r)
    seqs = [e.seq for e in first + rest]
    # the old buffer is final, so it is drained completely first (docs/kmes.md §7.7)
    assert seqs == [*range(1, 301), *range(2199, 2301)]
    assert r.generation == 3 and r.stats.generations == 1
    assert r.stats.lapped_events == 2198 - 300 and r.stats.gap_events == 0
    r.close()
    b.close()
