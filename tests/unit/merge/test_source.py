"""RingSource: a merge over ringtool reader rings consumes only what it took.

Hand-built RINGBUF rings (tests/helpers/builders/ringbuf.py) read through the real
RingbufReaderRing: the ring position is checked after every step.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable

import pytest

from ringtool.errors import ArgumentError, RecordFormatError
from ringtool.merge import FetchSource, ListSource, merge_sources, ring_source, u64_at
from ringtool.readers.ringbuf_group import merge_rings
from ringtool.readers.ringbuf_reader_ring import RingbufReaderRing
from tests.helpers.builders.ringbuf import HandRing


def _ring(stamps: list[int | bytes]) -> tuple[HandRing, RingbufReaderRing]:
    hand = HandRing(4096)
    for t in stamps:
        hand.output(t if isinstance(t, bytes) else struct.pack("<QQ", t, t))
    return hand, RingbufReaderRing(hand.state, hand.state.data, 0, -1, None, 0)


def _ts(rec: bytes) -> int:
    return int(struct.unpack_from("<Q", rec)[0])


def test_taken_records_are_committed_the_rest_given_back() -> None:
    hand, ring = _ring(list(range(1, 11)))
    src = ring_source(ring, u64_at(0), batch=4)
    assert [_ts(src.pop()[1]) for _ in range(3)] == [1, 2, 3]  # type: ignore[index]
    assert hand.consumer_pos == 0  # the batch is copied, not committed
    src.settle()
    assert hand.consumer_pos == 3 * 24  # exactly the three records taken
    assert [_ts(r) for r in ring.copy_out(100)] == list(range(4, 11))


def test_a_full_batch_is_committed_at_the_next_fetch() -> None:
    hand, ring = _ring(list(range(1, 9)))
    src = ring_source(ring, u64_at(0), batch=4)
    for _ in range(4):
        src.pop()
    assert hand.consumer_pos == 0
    src.peek()  # fetches the next batch: the first one is all taken
    assert hand.consumer_pos == 4 * 24


@pytest.mark.parametrize("how", ["close", "gc"])
def test_an_abandoned_merge_loses_nothing(how: str) -> None:
    rings = [_ring([t * 2 + i for t in range(1, 51)]) for i in range(2)]
    m = merge_rings([r for _h, r in rings], u64_at(0), batch=16)
    first = [_ts(ev[1]) for ev in m.take(15)]
    if how == "close":
        m.close()
    else:
        del m
        gc.collect()
    rest = [_ts(ev[1]) for ev in merge_rings([r for _h, r in rings], u64_at(0))]
    assert first + rest == sorted(first + rest) == sorted({*first, *rest})
    assert len(first + rest) == 100


def test_short_record_is_consumed_and_reported_once() -> None:
    hand, ring = _ring([1, 2, b"\x03\0\0", 4, 5])
    src = ring_source(ring, u64_at(0), batch=8)
    got = [_ts(src.pop()[1]) for _ in range(2)]  # type: ignore[index]
    with pytest.raises(RecordFormatError, match="3 bytes"):
        src.peek()
    assert src.bad == 1
    got += [_ts(src.pop()[1]) for _ in range(2)]  # type: ignore[index]
    assert got == [1, 2, 4, 5] and src.peek() is None
    src.settle()
    assert hand.consumer_pos == hand.producer_pos


def test_optimized_merge_delivers_the_event_before_a_bad_record() -> None:
    _h0, bad = _ring([10, b"\1\0", 30])
    _h1, good = _ring([20, 40])
    m = merge_rings([bad, good], u64_at(0), algorithm="optimized", batch=1)
    assert _ts(m.next()[1]) == 10  # type: ignore[index]  # its successor is bad
    with pytest.raises(RecordFormatError):
        m.next()
    # the buffer left the active list with the error: rejoins at the next rebuild
    # (the optimized algorithm's "empty, then filled" case), counted as out of order
    assert [_ts(ev[1]) for ev in m] == [20, 40, 30] and m.stats.out_of_order == 1


def test_fetch_source_keeps_records_after_a_bad_one() -> None:
    batches = [[b"\1" + bytes(7), b"\2", b"\3" + bytes(7)], []]
    src: FetchSource[bytes] = FetchSource(lambda n: batches.pop(0), u64_at(0))
    assert src.pop() == (1, b"\1" + bytes(7))
    with pytest.raises(RecordFormatError):
        src.pop()
    assert src.pop() == (3, b"\3" + bytes(7)) and src.pop() is None and src.bad == 1


def test_bad_merge_arguments_are_argument_errors() -> None:
    calls: list[Callable[[], object]] = [
        lambda: merge_sources([]),
        lambda: merge_sources([ListSource()], algorithm="fast"),  # type: ignore[arg-type]
        lambda: merge_sources([ListSource()], algorithm=[]),  # type: ignore[arg-type]
        lambda: merge_sources([ListSource()], window_us=float("nan")),
        lambda: merge_sources([ListSource()], window_us=float("inf")),
        lambda: merge_sources([ListSource()], window_us=-1),
        lambda: FetchSource(lambda n: [], u64_at(0), batch=0),
        lambda: u64_at(-1),
        lambda: u64_at(1.5),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(ArgumentError):
            call()
