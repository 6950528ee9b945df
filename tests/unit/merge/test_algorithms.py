"""ringtool.merge: scenarios of K per-CPU buffers as tables, and properties.

Timestamps in the tables are µs written as ``t * US`` so windows read in µs.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.merge import (
    Algorithm,
    DequeSource,
    FetchSource,
    ListSource,
    Merger,
    OptimizedMerge,
    ReorderWindow,
    Source,
    merge_sources,
    ring_source,
    u64_at,
)
from ringtool.readers.ringbuf_reader_ring import RingbufReaderRing
from tests.helpers.builders.ringbuf import HandRing

US = 1000
ALGOS: tuple[Algorithm, ...] = ("default", "optimized")


def _run(m: Merger[Any]) -> tuple[list[int], list[int]]:
    """Timestamps (in µs) and buffer ids of everything the merger delivers now."""
    ts: list[int] = []
    bufs: list[int] = []
    for ev in m:
        ts.append(ev[0] // US)
        bufs.append(m.last_buffer)
    return ts, bufs


def _lists(*bufs: Sequence[int]) -> list[ListSource[str]]:
    return [ListSource((t * US, f"b{i}:{t}") for t in b) for i, b in enumerate(bufs)]


# --- legacy_ebpf / kmod: per-device blocks ------------------------------------------------


class BlockSource(ListSource[str]):
    """A device whose data is read in blocks: the next block becomes visible only
    when the reader refills *all* devices (every buffer found empty)."""

    def __init__(self, blocks: list[list[int]]) -> None:
        super().__init__()
        self._blocks = [[(t * US, str(t)) for t in b] for b in blocks]
        self.refill()

    def refill(self) -> None:
        if self._blocks:
            self.push_many(self._blocks.pop(0))


# BUF0..BUF3: four devices that store events in blocks; each inner list is one block,
# and a device's next block becomes visible only at a refill (see BlockSource).
SEED_BLOCKS = [
    [[1, 2, 3, 4], [5, 6]],
    [[7, 8, 9], [12]],
    [[10], [13, 14, 15]],
    [[11], [16]],
]


@pytest.mark.parametrize("algorithm", ALGOS)
def test_seed_blocks_read_7_after_4(algorithm: Algorithm) -> None:
    srcs = [BlockSource(b) for b in SEED_BLOCKS]
    m = merge_sources(srcs, algorithm=algorithm)
    out: list[int] = []
    for _ in range(3):  # read, refill all, read
        out += _run(m)[0]
        for s in srcs:
            s.refill()
    # "after the event with timestamp 4 we will read the event with timestamp 7"
    assert out == [1, 2, 3, 4, 7, 8, 9, 10, 11, 5, 6, 12, 13, 14, 15, 16]
    st_ = m.stats
    assert st_.delivered == 16
    assert st_.out_of_order == 1  # 5 after 11
    assert st_.out_of_order_per_buffer == (1, 0, 0, 0)
    assert st_.max_lateness_ns == 6 * US


# --- modern_ebpf, 1 buffer per CPU: the empty-then-filled race ----------------------------


class RacySource(ListSource[str]):
    """A buffer that receives ``late`` right after it is first found empty."""

    def __init__(self, events: list[int], late: list[int]) -> None:
        super().__init__((t * US, str(t)) for t in events)
        self._late = late

    def peek(self) -> tuple[int, str] | None:
        ev = super().peek()
        if ev is None and self._late:
            self.push_many((t * US, str(t)) for t in self._late)
            self._late = []
        return ev


# (BUF0 now, BUF0 late arrivals, BUF1, BUF2, BUF3) -> output per algorithm
RACES: list[tuple[tuple[list[int], ...], dict[str, list[int]], dict[str, int]]] = [
    # The seed's example: BUF0 empty when scanned, then gets 1; BUF3 gets 4 before
    # the scan reaches it. default: 1 comes at the next call; optimized: BUF0 left
    # the active list (2->3->4) and is read when the list is empty.
    (
        ([], [1], [2], [3], [4]),
        {"default": [2, 1, 3, 4], "optimized": [2, 3, 4, 1]},
        {"default": 1, "optimized": 3},
    ),
    # More data on BUF1 makes the optimized algorithm's delay longer.
    (
        ([], [1], [2, 5, 6], [3], [4]),
        {"default": [2, 1, 3, 4, 5, 6], "optimized": [2, 3, 4, 5, 6, 1]},
        {"default": 1, "optimized": 5},
    ),
]


@pytest.mark.parametrize(("bufs", "expected", "late"), RACES)
@pytest.mark.parametrize("algorithm", ALGOS)
def test_seed_empty_then_filled_race(
    algorithm: Algorithm,
    bufs: tuple[list[int], ...],
    expected: dict[str, list[int]],
    late: dict[str, int],
) -> None:
    srcs = [RacySource(bufs[0], bufs[1])] + [RacySource(b, []) for b in bufs[2:]]
    m = merge_sources(srcs, algorithm=algorithm)
    ts, bufids = _run(m)
    assert ts == expected[algorithm]
    # exactly one out-of-order event, on BUF0; never out of order within a buffer
    assert m.stats.out_of_order == 1
    assert m.stats.out_of_order_per_buffer == (1, 0, 0, 0)
    for b in range(4):
        mine = [t for t, bb in zip(ts, bufids, strict=True) if bb == b]
        assert mine == sorted(mine)
    assert m.stats.max_lateness_ns == late[algorithm] * US


@pytest.mark.parametrize(("bufs", "_expected", "late"), RACES)
@pytest.mark.parametrize("algorithm", ALGOS)
def test_race_fixed_by_window(
    algorithm: Algorithm, bufs: tuple[list[int], ...], _expected: object, late: dict[str, int]
) -> None:
    srcs = [RacySource(bufs[0], bufs[1])] + [RacySource(b, []) for b in bufs[2:]]
    w = late[algorithm]
    m = merge_sources(srcs, algorithm=algorithm, window_us=w)
    assert isinstance(m, ReorderWindow)
    out = [ev[0] // US for ev in m] + [ev[0] // US for ev in m.flush()]
    assert out == sorted(out)
    assert len(out) == sum(len(b) for b in bufs)
    assert m.stats.out_of_order == 0
    assert m.stats.held == 0


# --- modern_ebpf, 1 buffer for 2 CPUs ------------------------------------------------------

# BUF0 is written by CPU0 and CPU1: CPU0's 2 and 3 were stamped before CPU1's 5 but
# reserved their space after it. BUF1 is another CPU pair.
SHARED = ([1, 5, 2, 3], [4, 6])


@pytest.mark.parametrize("algorithm", ALGOS)
def test_seed_shared_buffer_out_of_order_in_same_buffer(algorithm: Algorithm) -> None:
    m = merge_sources(_lists(*SHARED), algorithm=algorithm)
    ts, bufs = _run(m)
    assert ts == [1, 4, 5, 2, 3, 6]
    assert bufs == [0, 1, 0, 0, 0, 1]
    assert m.stats.out_of_order == 1
    assert m.stats.out_of_order_per_buffer == (1, 0)
    assert m.stats.max_lateness_ns == 3 * US


@pytest.mark.parametrize("algorithm", ALGOS)
def test_shared_buffer_window(algorithm: Algorithm) -> None:
    m = merge_sources(_lists(*SHARED), algorithm=algorithm, window_us=3)
    assert isinstance(m, ReorderWindow)
    out = [ev[0] // US for ev in m]
    assert out == [1, 2, 3]  # 4, 5, 6 are within 3 µs of the newest: held
    assert m.stats.held == 3
    m.advance(100 * US)  # the clock moved on: release
    assert [ev[0] // US for ev in m] == [4, 5, 6]
    assert m.stats.out_of_order == 0
    assert m.stats.delivered == 6


def test_one_shared_buffer() -> None:
    m = merge_sources(_lists([3, 1, 2]), algorithm="optimized")
    assert _run(m)[0] == [3, 1, 2]
    assert m.stats.out_of_order == 1


# --- behaviour details ---------------------------------------------------------------------


def test_ties_go_to_lowest_buffer_id_in_both() -> None:
    for algorithm in ALGOS:
        m = merge_sources(_lists([1, 2], [1, 2], [2]), algorithm=algorithm)
        assert _run(m)[1] == [0, 1, 0, 1, 2]


def test_optimized_active_list_and_rebuilds() -> None:
    srcs = _lists([1, 4], [2], [])
    m = OptimizedMerge(srcs)
    assert m.next() is not None and m.active == [1, 0]
    assert m.next() is not None and m.active == [0]  # BUF1 emptied: it left the list
    srcs[1].push(3 * US, "late")
    assert m.next() == (4 * US, "b0:4")  # BUF1 is not looked at while BUF0 is active
    assert m.next() == (3 * US, "late")  # list empty: rebuilt
    assert m.next() is None
    assert m.stats.rebuilds == 2
    assert m.stats.out_of_order == 1


def test_default_sees_refilled_buffer_at_once() -> None:
    srcs = _lists([1, 4], [2], [])
    m = merge_sources(srcs, algorithm="default")
    assert m.next() is not None and m.next() is not None
    srcs[1].push(3 * US, "late")
    assert m.next() == (3 * US, "late")


def test_empty_and_bad_arguments() -> None:
    m: Merger[str] = merge_sources(_lists([], []))
    assert m.next() is None and list(m) == []
    assert m.last_buffer == -1
    with pytest.raises(ValueError, match="at least one"):
        merge_sources([ListSource[int]()][:0])
    with pytest.raises(ValueError, match="unknown merge algorithm"):
        merge_sources(_lists([1]), algorithm="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="window_us"):
        merge_sources(_lists([1]), window_us=-1)


def test_take_and_deque_source() -> None:
    dq: deque[tuple[int, str]] = deque([(1, "a"), (3, "c")])
    srcs: list[Source[str]] = [DequeSource(dq), ListSource([(2, "b")])]
    m = merge_sources(srcs, algorithm="default")
    assert m.take(2) == [(1, "a"), (2, "b")]
    dq.append((4, "d"))
    assert m.take(10) == [(3, "c"), (4, "d")]


def test_ring_source_over_a_ring() -> None:
    hand = HandRing(4096)
    original = [t.to_bytes(8, "little") + b"x" * 8 for t in (5, 6, 7)]
    for rec in original:
        hand.output(rec)
    ring = RingbufReaderRing(hand.state, hand.state.data, 0, -1, None, 0)
    src = ring_source(ring, u64_at(0), batch=2)
    assert src.peek() == (5, original[0])
    assert hand.consumer_pos == 0  # copied, not committed
    got = [src.pop(), src.pop(), src.pop(), src.pop()]
    assert [g[0] if g else None for g in got] == [5, 6, 7, None]
    assert src.fetched == 3 and hand.consumer_pos == hand.producer_pos
    conv = FetchSource(lambda n: [b"\x09" + b"\0" * 7], u64_at(0), payload=len)
    assert conv.pop() == (9, 8)
    with pytest.raises(ValueError):
        u64_at(-1)


def test_fetch_source_over_decoded_kmes_events() -> None:
    from ringtool.kmes.layout import Event

    def reader(cpu: int, stamps: list[int]) -> Callable[[int], list[Event]]:
        pending = [Event(1, 3, 0, t, i + 1, cpu, b"") for i, t in enumerate(stamps)]

        def drain(max_events: int) -> list[Event]:
            out = pending[:max_events]
            del pending[:max_events]
            return out

        return drain

    srcs: list[FetchSource[Event]] = [
        FetchSource(reader(0, [10, 30]), operator.attrgetter("timestamp")),
        FetchSource(reader(1, [20, 40]), operator.attrgetter("timestamp")),
    ]
    m = merge_sources(srcs)
    assert [(ev[1].cpu_id, ev[1].seq) for ev in m] == [(0, 1), (1, 1), (0, 2), (1, 2)]


def test_kmes_header_timestamp_offset() -> None:
    hdr = bytearray(32)
    hdr[8:16] = (123456789).to_bytes(8, "little")
    assert u64_at(8)(bytes(hdr)) == 123456789


# --- properties -----------------------------------------------------------------------------

buffers = st.lists(st.lists(st.integers(0, 50), max_size=12), min_size=1, max_size=8)


def _events(bufs: list[list[int]]) -> list[list[tuple[int, tuple[int, int]]]]:
    return [[(t, (b, i)) for i, t in enumerate(buf)] for b, buf in enumerate(bufs)]


def _recount(m: Merger[Any], k: int) -> tuple[list[tuple[int, Any]], int, list[int]]:
    out: list[tuple[int, Any]] = []
    per = [0] * k
    ooo = 0
    for ev in m:
        if out and ev[0] < out[-1][0]:
            ooo += 1
            per[m.last_buffer] += 1
        out.append(ev)
    return out, ooo, per


@settings(max_examples=300, deadline=None)
@given(buffers)
def test_sorted_buffers_give_the_sorted_union(bufs: list[list[int]]) -> None:
    bufs = [sorted(b) for b in bufs]
    evs = _events(bufs)
    union = sorted((e for b in evs for e in b), key=lambda e: (e[0], e[1][0]))
    for algorithm in ALGOS:
        m = merge_sources([ListSource(b) for b in evs], algorithm=algorithm)
        out = list(m)
        assert out == union
        assert m.stats.out_of_order == 0
        assert m.stats.delivered == len(union)


@settings(max_examples=300, deadline=None)
@given(buffers)
def test_both_algorithms_agree_and_counts_are_exact(bufs: list[list[int]]) -> None:
    evs = _events(bufs)
    results = []
    for algorithm in ALGOS:
        m = merge_sources([ListSource(b) for b in evs], algorithm=algorithm)
        out, ooo, per = _recount(m, len(bufs))
        s = m.stats
        assert (s.out_of_order, list(s.out_of_order_per_buffer)) == (ooo, per)
        assert s.delivered == len(out) == sum(map(len, bufs))
        results.append((out, s.out_of_order_per_buffer, s.max_lateness_ns))
    assert results[0] == results[1]


@settings(max_examples=300, deadline=None)
@given(buffers, st.sampled_from(ALGOS), st.integers(0, 3))
def test_window_at_least_max_lateness_orders_everything(
    bufs: list[list[int]], algorithm: Algorithm, extra: int
) -> None:
    evs = [[(t * US, p) for t, p in b] for b in _events(bufs)]
    plain = list(merge_sources([ListSource(b) for b in evs], algorithm=algorithm))
    newest = -1
    lateness = 0
    for t, _ in plain:  # how far each event is behind the newest before it
        lateness = max(lateness, newest - t)
        newest = max(newest, t)
    w = merge_sources(
        [ListSource(b) for b in evs],
        algorithm=algorithm,
        window_us=lateness // US + extra,
    )
    assert isinstance(w, ReorderWindow)
    out, ooo, _per = _recount(w, len(bufs))
    out += list(w.flush())
    assert [t for t, _ in out] == sorted(t for t, _ in plain)
    assert sorted(out) == sorted(plain)
    assert ooo == 0 and w.stats.out_of_order == 0
    assert w.stats.delivered == len(plain)


@settings(max_examples=200, deadline=None)
@given(buffers, st.integers(0, 20))
def test_window_counts_are_exact(bufs: list[list[int]], window: int) -> None:
    evs = [[(t * US, p) for t, p in b] for b in _events(bufs)]
    w = merge_sources([ListSource(b) for b in evs], window_us=window)
    assert isinstance(w, ReorderWindow)
    out, ooo, per = _recount(w, len(bufs))
    assert w.stats.out_of_order == ooo
    assert list(w.stats.out_of_order_per_buffer) == per
    rest = list(w.flush())
    if out and rest:
        assert rest[0][0] >= max(t for t, _ in out) - window * US
