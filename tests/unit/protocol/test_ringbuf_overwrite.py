"""RINGBUF overwrite mode (BPF_F_RB_OVERWRITE) on hand-built rings: the reader starts at
max(consumer_pos, overwrite_pos), never delivers a record the producer overwrote while
it was read, and counts what it skipped (no root needed)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.protocol.ringbuf import record_span
from ringtool.protocol.ringbuf_overwrite import OverwriteRingbufRing
from tests.helpers.builders.ringbuf_overwrite import OverwriteHandRing

HDR = 8


def payload(seq: int, length: int) -> bytes:
    """Record ``seq``: its number, then bytes that depend on it (a torn copy shows)."""
    body = bytes((seq * 31 + i * 7) & 0xFF for i in range(max(0, length - 4)))
    return struct.pack("<I", seq) + body


def check(rec: bytes) -> int:
    seq = struct.unpack_from("<I", rec)[0]
    assert rec == payload(seq, len(rec)), f"record {seq} delivered torn"
    return int(seq)


def test_the_selftest_ringbuf_overwrite_mode_scenario() -> None:
    """prog_tests/ringbuf.c ringbuf_overwrite_mode_subtest on a one-page ring: the
    positions the kernel reports there, and the reader delivers rec2, rec4, rec5."""
    size = 4096
    len1, len2 = size // 2, size // 4
    len3 = size - len1 - len2 - HDR * 3
    len4, len5 = len3 - 8, len3
    ring = OverwriteHandRing(size)
    rec1 = ring.reserve(b"\x01" * len1)
    rec2 = ring.reserve(b"\x02" * len2)
    assert rec1 is not None and rec2 is not None
    assert ring.reserve(b"\x03" * len3) is None  # rec1 still BUSY: never overwritten
    rec4 = ring.reserve(b"\x04" * len4)
    assert rec4 is not None
    for pos in (rec1, rec2, rec4):
        ring.commit(pos)
    assert ring.output(b"\xdd" * len5)
    assert ring.overwrite_pos == len1 + HDR
    assert ring.producer_pos == len1 + len2 + len4 + len5 + 4 * HDR
    assert ring.state.avail_data_size == len2 + len4 + len5 + 3 * HDR
    got: list[bytes] = []
    ring.state.drain(lambda v: got.append(bytes(v)), 100)
    assert got == [b"\x02" * len2, b"\x04" * len4, b"\xdd" * len5]
    assert ring.state.overwritten == 0  # rec1 went before the reader ever looked
    assert ring.state.uncounted_bytes == ring.state.skipped_bytes == len1 + HDR


def test_reader_starts_at_overwrite_pos_and_counts_records_it_saw() -> None:
    ring = OverwriteHandRing(1024)
    for i in range(5):
        assert ring.output(payload(i, 100))
    views, _end = ring.state.views(100)  # the reader has seen (not committed) 5 headers
    assert [check(bytes(v)) for v in views] == [0, 1, 2, 3, 4]
    for v in views:
        v.release()
    for i in range(5, 12):
        assert ring.output(payload(i, 100))  # 12 spans of 112 > 1024: laps records 0..2
    got: list[bytes] = []
    ring.state.drain(lambda v: got.append(bytes(v)), 100)
    assert [check(g) for g in got] == list(range(3, 12))
    # the reader walked 0..2 from its own position: their headers were still intact
    assert ring.state.overwritten == 3 and ring.state.uncounted_bytes == 0


def test_a_busy_record_stops_the_reader_and_is_never_overwritten() -> None:
    ring = OverwriteHandRing(512)
    assert ring.output(payload(0, 40))
    busy = ring.reserve_header(40)
    assert busy is not None
    assert ring.output(payload(1, 40))
    got: list[bytes] = []
    ring.state.drain(lambda v: got.append(bytes(v)), 100)
    assert [check(g) for g in got] == [0]
    while ring.output(payload(2, 40)):
        pass  # fills until the BUSY record would be overwritten: then refused
    assert ring.producer_pos - busy <= ring.mask
    ring.write(busy + 8, payload(9, 40))
    ring.commit(busy)
    ring.state.drain(lambda v: got.append(bytes(v)), 100)
    assert [check(g) for g in got][:3] == [0, 9, 1]


class TornRing(OverwriteRingbufRing):
    """Copies each payload in two halves with the producer running in between: the
    kernel producer writing while the reader copies."""

    hook: Callable[[], None] = staticmethod(lambda: None)

    def payload(self, off: int, length: int) -> bytes:
        half = length // 2
        first = bytes(self.data[off + 8 : off + 8 + half])
        self.hook()
        return first + bytes(self.data[off + 8 + half : off + 8 + length])


class TornSource:
    """``source[a:b]`` as the read() path slices the mmap, torn the same way."""

    def __init__(self, ring: TornRing) -> None:
        self.ring = ring

    def __getitem__(self, s: slice) -> bytes:
        mid = (s.start + s.stop) // 2
        first = bytes(self.ring.data[s.start : mid])
        self.ring.hook()
        return first + bytes(self.ring.data[mid : s.stop])


class Producer:
    def __init__(self, ring: OverwriteHandRing, lengths: list[int], schedule: list[int]):
        self.ring, self.lengths, self.schedule = ring, lengths, schedule
        self.seq = self.tick = 0

    @property
    def done(self) -> bool:
        return self.seq >= len(self.lengths)

    def step(self) -> None:
        """Produce the next few records (how many: the schedule, cycled)."""
        n = self.schedule[self.tick % len(self.schedule)]
        self.tick += 1
        for _ in range(n):
            if self.done:
                return
            assert self.ring.output(payload(self.seq, self.lengths[self.seq]))
            self.seq += 1


def run(
    size: int, start: int, lengths: list[int], schedule: list[int], style: str, limit: int
) -> tuple[list[int], TornRing]:
    ring = OverwriteHandRing(size, start_pos=start)
    state = TornRing(ring.cons_page, ring.prod_page, ring.data, size)
    prod = Producer(ring, lengths, schedule)
    state.hook = prod.step
    got: list[bytes] = []

    def read_once() -> None:
        if style == "drain":
            state.drain(lambda v: got.append(bytes(v)), limit)
        else:
            datas, _s, end = state.copy_pending(TornSource(state), 0, limit)
            got.extend(datas)
            state.advance(end)

    while not prod.done:
        prod.step()
        if not prod.done and prod.schedule[(prod.tick - 1) % len(prod.schedule)] == 0:
            assert prod.ring.output(payload(prod.seq, lengths[prod.seq]))  # always progress
            prod.seq += 1
        read_once()
    state.hook = lambda: None
    for _ in range(len(lengths) + 1):
        read_once()
    return [check(g) for g in got], state


@settings(max_examples=300, deadline=None)
@given(
    size=st.sampled_from([256, 512, 1024]),
    start_rec=st.integers(0, 127),
    laps=st.integers(0, 3),
    lengths=st.lists(st.integers(4, 120), min_size=1, max_size=60),
    schedule=st.lists(st.integers(0, 9), min_size=1, max_size=8),
    style=st.sampled_from(["drain", "read"]),
    limit=st.integers(1, 20),
)
def test_a_producer_lapping_a_slow_reader_at_every_offset(
    size: int,
    start_rec: int,
    laps: int,
    lengths: list[int],
    schedule: list[int],
    style: str,
    limit: int,
) -> None:
    start = laps * size + (start_rec * 8) % size
    seqs, state = run(size, start, lengths, schedule, style, limit)
    assert seqs == sorted(set(seqs)), "out of order or delivered twice"
    missing = [i for i in range(len(lengths)) if i not in set(seqs)]
    # every byte the reader skipped is a missing record's, and nothing else is missing
    assert sum(record_span(lengths[i]) for i in missing) == state.skipped_bytes
    assert state.overwritten <= len(missing)
    if state.uncounted_bytes == 0:
        assert len(seqs) + state.overwritten == len(lengths)


@settings(max_examples=200, deadline=None)
@given(
    length=st.integers(4, 120),
    n=st.integers(1, 80),
    schedule=st.lists(st.integers(0, 9), min_size=1, max_size=8),
    style=st.sampled_from(["drain", "read"]),
    limit=st.integers(1, 20),
)
def test_fixed_size_records_are_accounted_for_exactly(
    length: int, n: int, schedule: list[int], style: str, limit: int
) -> None:
    """delivered + overwritten + (uncounted bytes / record span) == produced."""
    seqs, state = run(512, 0, [length] * n, schedule, style, limit)
    span = record_span(length)
    assert state.uncounted_bytes % span == 0
    assert len(seqs) + state.overwritten + state.uncounted_bytes // span == n


def test_views_report_records_overwritten_while_leased() -> None:
    ring = OverwriteHandRing(512)
    for i in range(4):
        assert ring.output(payload(i, 100))
    views, _end = ring.state.views(10)
    start = ring.state.consumer_pos
    assert ring.state.overwritten_since(start, len(views)) == 0
    assert ring.output(payload(4, 100))  # overwrites record 0 under its view
    assert ring.state.overwritten_since(start, len(views)) == 1
    with pytest.raises(AssertionError):
        check(bytes(views[0]))  # what "not valid" means: the bytes changed
    assert check(bytes(views[1])) == 1
    for v in views:
        v.release()


def test_batch_copies_drop_rows_overwritten_while_copied() -> None:
    dt = np.dtype([("seq", "<u4"), ("pad", "u1", 12)])
    ring = OverwriteHandRing(512)
    for i in range(20):
        assert ring.output(struct.pack("<I", i) + bytes(12))
    parts, _end, n = ring.state.batch(dt, 100, copy=True, commit=True)
    rows = np.concatenate(parts)
    assert len(rows) == n and list(rows["seq"]) == list(range(20 - len(rows), 20))
    assert ring.state.overwritten == 0  # the rest were gone before it looked


def test_hand_out_helpers_have_kernel_signatures() -> None:
    ring = OverwriteHandRing(4096)
    state: Any = ring.state
    assert state.overwritten_since(12345, 3) == 0  # another hand-out: nothing known
    with pytest.raises(ValueError, match="overwrite_pos"):
        OverwriteRingbufRing(ring.cons_page, ring.prod_page[:8], ring.data, 4096)
