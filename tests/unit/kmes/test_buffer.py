"""KMES writer + reader on real sealed memfds, in one process."""

from __future__ import annotations

import fcntl
import mmap
import os
import random
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.kernel.shm import F_SEAL_FUTURE_WRITE, DoubleMapping
from ringtool.kmes import layout as L
from ringtool.kmes.buffer import KmesBuffer
from ringtool.kmes.reader import Reader
from ringtool.kmes.writer import Writer
from tests.helpers.kmes import drain_all, payload_for

CAP = 4096


@pytest.fixture
def ring() -> Iterator[tuple[KmesBuffer, Writer]]:
    buf = KmesBuffer(0, CAP)
    yield buf, Writer(buf)
    buf.close()


def test_memfds_sealed_and_sized(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, _ = ring
    assert os.fstat(buf.meta_fd).st_size == 4096
    assert os.fstat(buf.data_fd).st_size == CAP
    size = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
    assert fcntl.fcntl(buf.meta_fd, fcntl.F_GET_SEALS) == size  # stays writable
    assert fcntl.fcntl(buf.data_fd, fcntl.F_GET_SEALS) == size | F_SEAL_FUTURE_WRITE
    for fd, n in ((buf.meta_fd, 4096), (buf.data_fd, CAP)):
        for bad in (0, n // 2, 2 * n):
            with pytest.raises(PermissionError):
                os.ftruncate(fd, bad)


def test_double_mapping_aliases_and_crossing_event(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    assert len(buf.data) == 2 * CAP
    buf.data[CAP + 5] = 0x5A  # write through the second mapping...
    assert buf.data[5] == 0x5A  # ...read through the first
    r = Reader(*buf.consumer_fds())
    w.write_batch([(1, 1, b"\0" * 1984)] * 2)  # frontier 64 bytes before the end
    assert w.write_pos == CAP - 64
    assert [e.seq for e in drain_all(r)] == [1, 2]
    w.write(2, payload_for(3, 200))  # crosses the physical end
    evs = drain_all(r)
    assert [e.seq for e in evs] == [3]
    assert evs[0].payload == payload_for(3, 200)
    # the bytes really wrapped: the payload tail sits at the start of the physical buffer
    assert bytes(buf.data[0:8]) == payload_for(3, 200)[32:40]
    assert r.stats.laps == 0 and w.tail_pos == 2016
    r.close()


def test_reader_maps_data_read_only(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, _ = ring
    r = Reader(*buf.consumer_fds())
    assert r._data.readonly and not r._meta.readonly
    with pytest.raises(TypeError):
        r._data[0] = 1  # type: ignore[index]
    r.close()


def test_header_fields_and_seq(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    r = Reader(*buf.consumer_fds())
    import time

    t0 = time.time_ns()
    w.write(7, b"hello", origin_class=L.ORIGIN_PERF)
    w.write_batch([(8, L.ORIGIN_RINGBUF, b""), (9, L.ORIGIN_BRIDGE, b"x" * 9)])
    evs = drain_all(r)
    assert [(e.event_type, e.origin_class, e.seq, e.cpu_id) for e in evs] == [
        (7, 2, 1, 0),
        (8, 1, 2, 0),
        (9, 3, 3, 0),
    ]
    assert all(t0 <= e.timestamp <= time.time_ns() for e in evs)
    assert buf.words64[L.Q_WRITE_POS] == 40 + 32 + 48
    r.close()


def test_oversized_event_dropped_with_visible_gap(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    r = Reader(*buf.consumer_fds())
    w.write(1, b"a")
    assert w.write(1, b"x" * CAP) == 2  # 2x oversized: dropped, seq consumed
    w.write(1, b"b")
    evs = drain_all(r)
    assert [e.seq for e in evs] == [1, 3]
    assert w.stats.dropped == 1 and r.stats.gap_events == 1 and r.stats.lapped_events == 0
    r.close()


def test_lapped_reader_counts_exactly(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    r = Reader(*buf.consumer_fds())
    w.write(1, b"first")
    assert [e.seq for e in r.drain()] == [1]
    for s in range(2, 502):
        w.write(1, payload_for(s, 24))  # 56 bytes each: laps the 4 KiB ring
    evs = drain_all(r)
    assert r.stats.laps == 1
    assert evs[0].seq == 501 - len(evs) + 1 and evs[-1].seq == 501
    assert r.stats.lapped_events == 500 - len(evs)
    assert r.stats.lapped_events + len(evs) + 1 == w.last_seq
    assert buf.words64[L.Q_TAIL_POS] == w.tail_pos
    assert w.write_pos - w.tail_pos <= CAP
    r.close()


def test_torn_read_detected_and_retried(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    r = Reader(*buf.consumer_fds())
    for s in range(1, 60):
        w.write(1, payload_for(s, 24))
    real_parse = r._parse
    fired: list[int] = []

    def parse_then_overwrite(rp: int, wp: int, limit: int) -> tuple[list[L.Event], int]:
        out = real_parse(rp, wp, limit)
        if not fired:  # the writer laps the reader while it is "reading"
            fired.append(1)
            for s in range(60, 160):
                w.write(1, payload_for(s, 24))
        return out

    r._parse = parse_then_overwrite  # type: ignore[method-assign]
    evs = drain_all(r)
    assert r.stats.torn == 1
    seqs = [e.seq for e in evs]
    assert seqs == sorted(set(seqs)) and seqs[-1] == 159
    assert all(e.payload == payload_for(e.seq, 24) for e in evs)
    assert r.stats.lapped_events + len(evs) == 159
    r.close()


ops = st.lists(
    st.one_of(
        st.tuples(st.just("w"), st.integers(0, 2300)),
        st.tuples(st.just("b"), st.lists(st.integers(0, 300), min_size=1, max_size=20)),
        st.tuples(st.just("r"), st.integers(1, 50)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_property_nothing_lost_unless_counted(script: list[tuple[str, object]]) -> None:
    buf = KmesBuffer(2, CAP)
    w = Writer(buf)
    r = Reader(*buf.consumer_fds())
    got: list[L.Event] = []
    dropped: set[int] = set()
    try:
        for op, arg in script:
            if op == "w":
                assert isinstance(arg, int)
                seq = w.last_seq + 1
                if L.event_size(arg) > CAP // 2:
                    dropped.add(seq)
                w.write(3, payload_for(seq, arg))
            elif op == "b":
                assert isinstance(arg, list)
                base = w.last_seq
                w.write_batch((3, 1, payload_for(base + i + 1, n)) for i, n in enumerate(arg))
            else:
                assert isinstance(arg, int)
                got.extend(r.drain(arg))
        got.extend(drain_all(r))
        seqs = [e.seq for e in got]
        assert seqs == sorted(set(seqs))  # order kept, no duplicate
        assert all(e.payload == payload_for(e.seq, len(e.payload)) for e in got)
        assert all(e.cpu_id == 2 for e in got)
        assert not set(seqs) & dropped
        if got:  # every seq up to the last one read is read or counted as lost
            assert len(got) + r.stats.lapped_events + r.stats.gap_events == seqs[-1]
        if r.stats.laps == 0:  # nothing lost unless lapped
            assert set(range(1, (seqs[-1] if seqs else 0) + 1)) - set(seqs) <= dropped
        assert r.stats.torn == 0
    finally:
        r.close()
        buf.close()


def test_scribbled_metadata_does_not_stop_writer(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    good = Reader(*buf.consumer_fds())
    meta_fd, data_fd = buf.consumer_fds()
    evil = DoubleMapping(meta_fd, data_fd, 4096, CAP, writable_ring=False)
    rnd = random.Random(5)
    got: list[L.Event] = []
    for s in range(1, 3001):
        if s % 7 == 0:  # scribble random bytes over the writable metadata page
            evil.head[64:4096] = rnd.randbytes(4096 - 64)
        w.write(1, payload_for(s, 16))
        if s % 5 == 0:
            got.extend(good.drain())
    evil.head[64:4096] = bytes(4096 - 64)  # scribbler quits; writer stores again
    w.write(1, payload_for(3001, 16))
    got.extend(drain_all(good))
    seqs = [e.seq for e in got]
    assert w.last_seq == 3001 and w.stats.written == 3001
    assert seqs == sorted(set(seqs)) and seqs[-1] == 3001
    assert all(e.payload == payload_for(e.seq, 16) for e in got)
    evil.close()
    os.close(meta_fd)
    os.close(data_fd)
    good.close()


def test_data_region_cannot_be_written_by_a_consumer(ring: tuple[KmesBuffer, Writer]) -> None:
    """Attach protocol v2: the data fd a consumer gets is read-only and the memfd is
    F_SEAL_FUTURE_WRITE-sealed, so no way of writing it works (v1 allowed all of them)."""
    buf, w = ring
    w.write(1, payload_for(1, 40))
    before = bytes(buf.data[0:CAP])
    meta_fd, data_fd = buf.consumer_fds()
    assert fcntl.fcntl(data_fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    with pytest.raises(PermissionError):
        mmap.mmap(data_fd, CAP, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    with pytest.raises(OSError):
        DoubleMapping(meta_fd, data_fd, 4096, CAP, writable_ring=True)
    rw = os.open(f"/proc/self/fd/{data_fd}", os.O_RDWR)  # docs/kmes.md §2.3: the re-open works...
    try:
        with pytest.raises(PermissionError):  # ...but nothing written through it does
            os.pwrite(rw, b"forged", 32)
        with pytest.raises(PermissionError):
            mmap.mmap(rw, CAP, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        with pytest.raises(PermissionError):
            os.ftruncate(rw, 0)
        with pytest.raises(PermissionError):
            fcntl.fcntl(rw, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
    finally:
        os.close(rw)
    assert bytes(buf.data[0:CAP]) == before
    # the metadata page stays writable for consumers (need_wake), but can't be re-sealed
    m = mmap.mmap(meta_fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    m[L.OFF_NEED_WAKE] = 1
    assert buf.meta[L.OFF_NEED_WAKE] == 1
    m.close()
    with pytest.raises(PermissionError):
        fcntl.fcntl(meta_fd, fcntl.F_ADD_SEALS, F_SEAL_FUTURE_WRITE)
    os.close(meta_fd)
    os.close(data_fd)
    w.write(1, payload_for(2, 40))  # the writer's own mapping still writes
    r = Reader(*buf.consumer_fds())
    assert [e.payload for e in drain_all(r)] == [payload_for(1, 40), payload_for(2, 40)]
    r.close()


def test_writer_survives_bad_event_sizes_in_its_own_region(
    ring: tuple[KmesBuffer, Writer],
) -> None:
    """Defence in depth: even if the data region held garbage (it can't be written by a
    consumer any more), a tail walk never loops or crashes."""
    buf, w = ring
    for s in range(1, 50):
        w.write(1, payload_for(s, 40))
    buf.data[0:CAP] = bytes(CAP)  # event_size 0 everywhere: a tail walk would loop
    for s in range(50, 300):
        w.write(1, payload_for(s, 40))
    assert w.stats.corrupt_resets >= 1 and w.last_seq == 299
    r = Reader(*buf.consumer_fds())
    evs = drain_all(r)
    assert evs and evs[-1].seq == 299
    assert all(e.payload == payload_for(e.seq, 40) for e in evs)
    r.close()


def test_blocked_reader_is_woken(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    r = Reader(*buf.consumer_fds())
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(r.wait(timeout=30)))
    t.start()
    while not buf.meta[L.OFF_NEED_WAKE]:  # reader is about to sleep
        threading.Event().wait(0.001)
    w.write(1, b"wake")
    t.join(30)
    assert result == [True]
    assert w.stats.wakes >= 1 and buf.words32[L.I_FUTEX_COUNTER] >= 1
    assert [e.payload for e in r.drain()] == [b"wake"]
    assert r.wait(timeout=0.05) is False  # nothing new: times out
    assert buf.meta[L.OFF_NEED_WAKE] == 0
    r.close()


def test_start_head_skips_existing(ring: tuple[KmesBuffer, Writer]) -> None:
    buf, w = ring
    for _ in range(5):
        w.write(1, b"old")
    r = Reader(*buf.consumer_fds(), start="head")
    assert r.last_seq == 5 and r.drain() == []
    w.write(1, b"new")
    assert [(e.seq, e.payload) for e in r.drain()] == [(6, b"new")]
    assert r.stats.gap_events == 0
    r.close()
