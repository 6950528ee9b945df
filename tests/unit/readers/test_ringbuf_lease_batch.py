"""RingbufRing.batch(copy=False): the zero-copy arrays behind RingBuffer.lease_batch,
on hand-built rings (tests/helpers/builders/ringbuf.py plays the kernel)."""

from __future__ import annotations

import struct

import numpy as np

from tests.helpers.builders.ringbuf import HandRing

EV = np.dtype([("seq", "<u8"), ("a", "<u8"), ("b", "<u8")])  # 24 bytes, span 32


def rec(seq: int, size: int = 24) -> bytes:
    return struct.pack("<QQQ", seq, seq * 2, seq * 3)[:size].ljust(size, b"\0")


def test_equal_size_run_is_one_strided_view_and_nothing_is_committed() -> None:
    ring = HandRing(4096)
    for i in range(10):
        assert ring.output(rec(i))
    arrays, end, n = ring.state.batch(EV, 100, copy=False, commit=False)
    assert n == 10 and len(arrays) == 1 and end == 10 * 32
    (arr,) = arrays
    assert arr["seq"].tolist() == list(range(10))
    assert arr["b"].tolist() == [3 * i for i in range(10)]
    assert not arr.flags.owndata and arr.strides == (32,)
    assert np.shares_memory(arr, np.frombuffer(ring.data, np.uint8))
    assert ring.consumer_pos == 0  # the caller commits
    ring.write(8, struct.pack("<Q", 777))  # the producer rewrites record 0: the view shows it
    assert arr["seq"][0] == 777


def test_a_run_that_wraps_is_one_view_through_the_double_mapping() -> None:
    ring = HandRing(4096, start_pos=4096 - 64)  # records 0, 1 before the end; 2.. wrap
    for i in range(6):
        assert ring.output(rec(i))
    arrays, end, n = ring.state.batch(EV, 100, copy=False, commit=False)
    assert n == 6 and len(arrays) == 1 and end == 4096 - 64 + 6 * 32
    assert arrays[0]["seq"].tolist() == list(range(6))
    assert not arrays[0].flags.owndata


def test_other_sizes_are_copies_and_discarded_records_are_skipped() -> None:
    ring = HandRing(4096)
    for i in range(3):
        ring.output(rec(i))
    ring.output(rec(3, 16))  # shorter: zero-filled copy
    pos = ring.reserve(rec(99))
    assert pos is not None
    ring.commit(pos, discard=True)
    for i in range(4, 8):
        ring.output(rec(i))
    arrays, end, n = ring.state.batch(EV, 100, copy=False, commit=True)
    assert n == 8 and ring.consumer_pos == end == ring.producer_pos
    assert [a["seq"].tolist() for a in arrays] == [[0, 1, 2], [3], [4, 5, 6, 7]]
    assert [a.flags.owndata for a in arrays] == [False, True, False]
    assert arrays[1]["b"].tolist() == [0]  # the missing bytes are zeros


def test_limit_stops_inside_a_run() -> None:
    ring = HandRing(4096)
    for i in range(10):
        ring.output(rec(i))
    arrays, end, n = ring.state.batch(EV, 4, copy=False, commit=False)
    assert n == 4 and end == 4 * 32 and arrays[0]["seq"].tolist() == [0, 1, 2, 3]


def test_copy_true_is_the_callers_own() -> None:
    ring = HandRing(4096)
    for i in range(3):
        ring.output(rec(i))
    arr = ring.state.decode_batch(EV, 100)
    assert arr.flags.owndata and arr["seq"].tolist() == [0, 1, 2]
    assert ring.consumer_pos == 3 * 32
