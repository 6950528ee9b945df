"""Fuzz of the RINGBUF and perf ring parsers on hand-built byte buffers.

Any bytes, any positions: every walk (callback, copy, views, numpy batch, copy_pending
+ position_after) must raise only ringtool errors and deliver exactly what a small,
independent reference parser written from the spec (kernel/bpf/ringbuf.c,
include/uapi/linux/perf_event.h) finds -- never a byte outside a record -- and leave
the consumer position exactly after what it delivered.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringtool.errors import CorruptRecordError, RingtoolError
from ringtool.protocol.perf import DATA_HEAD_OFF, PerfRing
from ringtool.protocol.ringbuf import RingbufRing

BUSY, DISCARD, LEN_MASK = 1 << 31, 1 << 30, (1 << 30) - 1
STYLES = ["drain", "copy", "views", "batch", "pending"]
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- reference parsers (deliberately naive) ---------------------------------------------


class Walk:
    """What a reference walk found: payloads, the position after each, where it
    stopped, and whether it stopped at a corrupt record (then ``stop`` is there)."""

    def __init__(self) -> None:
        self.out: list[bytes] = []
        self.ends: list[int] = []
        self.stop = 0
        self.corrupt = False
        self.lost = 0
        self.unknown = 0


def ref_ringbuf(data: bytes, size: int, cons: int, prod: int, limit: int) -> Walk:
    w = Walk()
    w.stop = pos = cons
    if cons & 7 or prod < cons or prod - cons > size:
        w.corrupt = True
        return w
    while pos < prod and len(w.out) < limit:
        off = pos % size
        (hdr,) = struct.unpack_from("<I", data, off)
        if hdr & BUSY:
            break
        length = hdr & LEN_MASK
        span = (length + 8 + 7) // 8 * 8
        if length > size - 8 or pos + span > prod:
            w.corrupt = True
            break
        pos += span
        if not hdr & DISCARD:
            w.out.append(data[off + 8 : off + 8 + length])  # data is doubled: contiguous
            w.ends.append(pos)
    w.stop = pos
    return w


def ref_perf(data: bytes, size: int, tail: int, head: int, limit: int) -> Walk:
    def read(pos: int, n: int) -> bytes:
        return bytes(data[(pos + i) % size] for i in range(n))

    w = Walk()
    w.stop = pos = tail
    if head < tail or head - tail > size:
        w.corrupt = True
        return w
    while pos < head and len(w.out) < limit:
        w.corrupt = True  # until the record is found sound
        if head - pos < 8:
            break
        typ, _misc, rsize = struct.unpack("<IHH", read(pos, 8))
        if rsize < 8 or rsize & 7 or rsize > size or rsize > head - pos:
            break
        if typ == 9:
            if rsize < 16:
                break
            (raw,) = struct.unpack("<I", read(pos + 8, 4))
            if raw + 12 > rsize:
                break
            w.out.append(read(pos + 12, raw))
            w.ends.append(pos + rsize)
        elif typ == 2:
            if rsize < 24:
                break
            w.lost += struct.unpack("<Q", read(pos + 16, 8))[0]
        else:
            w.unknown += 1
        w.corrupt = False
        pos += rsize
    w.stop = pos
    return w


# --- RINGBUF ----------------------------------------------------------------------------


def _records(draw: Any, size: int) -> bytes:
    """A data area: plausible records (some discarded/busy/corrupt) or raw noise."""
    if draw(st.booleans()):
        return bytes(draw(st.binary(min_size=size, max_size=size)))
    buf = bytearray()
    while len(buf) < size:
        length = draw(st.integers(0, 40))
        bits = draw(st.sampled_from([0, 0, 0, DISCARD, BUSY, BUSY | DISCARD]))
        if draw(st.integers(0, 15)) == 0:
            length = draw(st.integers(0, LEN_MASK))  # corrupt length
        rec = struct.pack("<II", length | bits, 0) + bytes([len(buf) & 0xFF]) * (length & 63)
        buf += rec.ljust((len(rec) + 7) // 8 * 8, b"\0")
    return bytes(buf[:size])


def _case(
    draw: Any, records: Callable[[Any, int], bytes], ahead: int
) -> tuple[int, bytes, int, int, int]:
    """A data area of 64..256 bytes filled by ``records``, the consumer's position
    (8-aligned, or anywhere), the producer's near it (behind, or up to ``ahead`` past the
    area), and a read limit."""
    size = draw(st.sampled_from([64, 128, 256]))
    data = records(draw, size)
    cons = draw(st.one_of(st.integers(0, 2**20).map(lambda x: x * 8), st.integers(0, 2**62)))
    prod = max(0, cons + draw(st.one_of(st.integers(-16, size + 16), st.integers(0, ahead))))
    return size, data, cons, prod, draw(st.integers(0, 12))


@st.composite
def ringbuf_case(draw: Any) -> tuple[int, bytes, int, int, int]:
    return _case(draw, _records, 2**8)


def _ringbuf(size: int, data: bytes, cons: int, prod: int) -> tuple[RingbufRing, bytearray]:
    cons_page, prod_page = bytearray(8), bytearray(8)
    struct.pack_into("<Q", cons_page, 0, cons)
    struct.pack_into("<Q", prod_page, 0, prod)
    doubled = bytearray(data + data)  # the kernel's double mapping
    return RingbufRing(cons_page, prod_page, doubled, size), cons_page


@FUZZ
@given(case=ringbuf_case(), style=st.sampled_from(STYLES))
def test_ringbuf_walks_match_the_reference(
    case: tuple[int, bytes, int, int, int], style: str
) -> None:
    size, data, cons, prod, limit = case
    ref = ref_ringbuf(data + data, size, cons, prod, limit)
    want = ref.out
    if style == "batch":
        want = [(w + bytes(8))[:8] for w in want]
    state, _page = _ringbuf(size, data, cons, prod)
    got: list[bytes] = []
    try:
        if style == "drain":
            state.drain(lambda v: got.append(bytes(v)), limit)
        elif style == "copy":
            got = state.copy_out(state.data, 0, limit)
        elif style == "views":
            views, end = state.views(limit)
            got = [bytes(v) for v in views]
            state.commit(end)
        elif style == "batch":
            got = [bytes(r) for r in state.decode_batch(np.dtype("V8"), limit)]
        else:
            got, start, end = state.copy_pending(state.data, 0, limit)
            assert state.consumer_pos == start == cons  # nothing committed
            for k in range(len(got) + 1):
                assert state.position_after(start, k) == (ref.ends[k - 1] if k else start)
            state.advance(end)
    except RingtoolError as exc:
        assert isinstance(exc, CorruptRecordError), exc
        assert ref.corrupt and exc.position == ref.stop
        # only a callback drain delivers records and then raises; the other styles
        # return the records before a corrupt one and raise when it comes first
        assert got == want if style == "drain" else not want
        assert state.consumer_pos in (cons, ref.stop)
        return
    assert got == want
    assert not ref.corrupt or want  # a corrupt first record is raised
    assert state.consumer_pos == ref.stop


# --- perf -------------------------------------------------------------------------------


def _perf_records(draw: Any, size: int) -> bytes:
    if draw(st.booleans()):
        return bytes(draw(st.binary(min_size=size, max_size=size)))
    buf = bytearray()
    while len(buf) < size:
        kind = draw(st.sampled_from(["s", "s", "s", "l", "u", "x"]))
        if kind == "s":
            payload = draw(st.binary(max_size=24))
            raw = (len(payload) + 4 + 7) // 8 * 8 - 4
            rec = struct.pack("<IHHI", 9, 0, 12 + raw, raw) + payload.ljust(raw, b"\0")
        elif kind == "l":
            rec = struct.pack("<IHHQQ", 2, 0, 24, 7, draw(st.integers(0, 2**40)))
        elif kind == "u":
            rec = struct.pack("<IHH", 5, 0, 16) + bytes(8)
        else:  # a header with any size / raw size
            rec = struct.pack(
                "<IHHI", draw(st.sampled_from([2, 9, 3])), 0, draw(st.integers(0, 600)),
                draw(st.integers(0, 2**32 - 1)),
            )  # fmt: skip
        buf += rec
    return bytes(buf[:size])


@st.composite
def perf_case(draw: Any) -> tuple[int, bytes, int, int, int]:
    return _case(draw, _perf_records, 2**9)


@FUZZ
@given(case=perf_case(), style=st.sampled_from(STYLES))
def test_perf_walks_match_the_reference(case: tuple[int, bytes, int, int, int], style: str) -> None:
    size, data, tail, head, limit = case
    ref = ref_perf(data, size, tail, head, limit)
    want = ref.out
    if style == "batch":
        want = [(w + bytes(8))[:8] for w in want]
    page = bytearray(4096)
    struct.pack_into("<QQ", page, DATA_HEAD_OFF, head, tail)
    ring = PerfRing(page, bytearray(data), cpu=1)
    got: list[bytes] = []
    try:
        if style == "drain":
            ring.drain(lambda c, v: got.append(bytes(v)), limit)
        elif style == "copy":
            got = ring.copy_out(limit)
        elif style == "views":
            views, commit = ring.lease(limit)
            got = [bytes(v) for v in views]
            commit()
        elif style == "batch":
            got = [bytes(r) for r in ring.read_batch(np.dtype("V8"), limit)]
        else:
            got, start, end = ring.copy_pending(limit)
            assert ring.page.data_tail == start == tail
            for k in range(len(got) + 1):
                assert ring.position_after(start, k) == (ref.ends[k - 1] if k else start)
            ring.copy_pending(limit)  # walking the same records again counts nothing again
            ring.advance(end)
    except RingtoolError as exc:
        assert isinstance(exc, CorruptRecordError), exc
        assert ref.corrupt and exc.position == ref.stop
        assert got == want if style == "drain" else not want
    else:
        assert got == want
        assert not ref.corrupt or want  # a corrupt first record is raised
    assert ring.page.data_tail == ref.stop
    assert (ring.lost_total, ring.unknown) == (ref.lost, ref.unknown)  # each counted once
