"""Net samples in timestamp order across CPUs (:mod:`ringtool.trace.reading.net_order`).

A model of the perf buffers: each CPU's samples are stamped in order and committed
within ``COMMIT`` ns of their stamp; a read begins at some time and takes CPU after
CPU, each at a later moment, whatever each buffer holds by then. Whatever the timing,
what the reorder releases is in stamp order (equal stamps in the order read), every
sample exactly once, and nothing is held after the last read."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.event.layout import load_layout
from ringtool.trace.reading.net_order import MAX_HOLD_NS, NetReorder

COMMIT = 1_000


def _sample(ts: int, tag: int) -> bytes:
    arr = np.zeros(1, dtype=load_layout().net)
    arr["h"]["ts"], arr["h"]["pid"] = ts, tag
    return arr.tobytes()


def _stamp(raw: bytes) -> int:
    return int(np.frombuffer(raw, dtype=load_layout().net, count=1)[0]["h"]["ts"])


cpu_streams = st.lists(  # per CPU: (gap to the previous stamp, commit delay)
    st.lists(st.tuples(st.integers(0, 3_000), st.integers(0, COMMIT)), max_size=40),
    min_size=1, max_size=4,
)  # fmt: skip
reads = st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 2_000)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(cpu_streams, reads)
def test_released_in_stamp_order_each_once(
    streams: list[list[tuple[int, int]]], plan: list[tuple[int, int]]
) -> None:
    """``plan``: per read, (pause before it begins, time to read one CPU's buffer)."""
    pending: dict[int, list[tuple[int, int, bytes]]] = {}  # cpu -> (commit, stamp, raw)
    tag = 0
    for cpu, stream in enumerate(streams):
        ts, out = 0, []
        for gap, delay in stream:
            ts += gap
            out.append((ts + delay, ts, _sample(ts, tag)))
            tag += 1
        pending[cpu] = out
    made = [raw for cpu in pending for _, _, raw in pending[cpu]]
    order = NetReorder(load_layout().net_ts_offset, commit_ns=COMMIT)
    got: list[tuple[int, bytes]] = []
    now = 0
    for pause, per_cpu in plan:
        now += pause
        began = now
        taken: list[tuple[int, bytes]] = []
        for cpu, queue in pending.items():
            now += per_cpu
            # a buffer is read in order: up to the first sample not yet committed
            n = 0
            while n < len(queue) and queue[n][0] <= now:
                n += 1
            taken += [(cpu, raw) for _, _, raw in queue[:n]]
            del queue[:n]
        got += order.add(began, taken)
    got += order.flush([(cpu, raw) for cpu, queue in pending.items() for _, _, raw in queue])
    assert order.held == 0
    assert sorted(raw for _, raw in got) == sorted(made)  # each once
    stamps = [_stamp(raw) for _, raw in got]
    assert stamps == sorted(stamps)
    for cpu in pending:  # one CPU's samples (stamps never decrease) keep their order
        mine = [raw for c, raw in got if c == cpu]
        assert [_stamp(r) for r in mine] == sorted(_stamp(r) for r in mine)


def test_a_sample_too_short_for_its_stamp_goes_out_first() -> None:
    order = NetReorder(load_layout().net_ts_offset, commit_ns=COMMIT)
    good = _sample(10, 1)
    assert order.add(0, [(0, good), (1, b"\x01\x02")]) == [(1, b"\x01\x02")]
    assert order.held == 1
    assert order.add(10 + COMMIT, []) == [(0, good)]


def test_a_read_holds_back_what_an_earlier_read_could_still_be_missing() -> None:
    order = NetReorder(load_layout().net_ts_offset, commit_ns=COMMIT)
    late = _sample(5_000, 1)
    assert order.add(5_500, [(1, late)]) == []  # within COMMIT of the read's start
    early = _sample(4_900, 2)  # CPU 0's, committed after CPU 0 was read
    assert order.add(7_000, [(0, early)]) == [(0, early), (1, late)]


def test_release_at_says_when_the_oldest_held_sample_can_go() -> None:
    order = NetReorder(load_layout().net_ts_offset, commit_ns=COMMIT)
    assert order.release_at() is None
    order.add(5_100, [(0, _sample(5_000, 1)), (1, _sample(4_500, 2))])
    assert order.release_at() == 4_500 + COMMIT
    assert [_stamp(r) for _, r in order.add(4_500 + COMMIT, [])] == [4_500]
    assert order.release_at() == 5_000 + COMMIT
    order.flush([])
    assert order.release_at() is None


def test_a_reader_clock_behind_the_stamps_still_releases_within_max_hold() -> None:
    """In a time namespace whose monotonic clock is set back, every stamp looks like the
    future: the samples go out once the reader's clock says MAX_HOLD_NS passed."""
    order = NetReorder(load_layout().net_ts_offset, commit_ns=COMMIT)
    future = 10**15
    first = [(1, _sample(future + 20, 1)), (0, _sample(future + 10, 2))]
    assert order.add(1_000, first) == []
    assert order.release_at() == 1_000 + MAX_HOLD_NS
    assert order.add(1_000 + MAX_HOLD_NS - 1, [(0, _sample(future + 30, 3))]) == []
    out = order.add(1_000 + MAX_HOLD_NS, [])
    assert [_stamp(r) for _, r in out] == [future + 10, future + 20]  # that read, sorted
    assert order.held == 1 and order.release_at() == 1_000 + 2 * MAX_HOLD_NS - 1


def test_the_last_read_releases_a_short_sample_too() -> None:
    order = NetReorder(load_layout().net_ts_offset, commit_ns=COMMIT)
    good = _sample(10, 1)
    assert order.flush([(0, good), (1, b"\x01")]) == [(1, b"\x01"), (0, good)]
    assert order.held == 0
