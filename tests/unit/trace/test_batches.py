"""What the trace loop hands on from one read (:mod:`ringtool.trace.batches`, no
kernel): every record once, in order; big arrays as they are (the ring views), small
neighbours joined. And the two keepers of records (the dashboard's recent store, the
export's batches) keep copies, not views of the ring they were read from: the ring's
space is reused once the read is consumed."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.records import Records
from ringtool.export.batcher import Batcher
from ringtool.trace.batches import pieces
from ringtool.trace.dashboard.tui_recent import RecentEvents
from tests.helpers.stats import LAYOUT

OPEN = LAYOUT.type_id("open")


@given(st.lists(st.integers(0, 40), max_size=12), st.integers(1, 30))
def test_every_record_once_in_order(sizes: list[int], min_view: int) -> None:
    arrays, start = [], 0
    for n in sizes:
        arrays.append(np.arange(start, start + n))
        start += n
    out = list(pieces(arrays, min_view))
    assert np.array_equal(np.concatenate(out) if out else np.empty(0), np.arange(start))
    big = [a for a in arrays if len(a) >= min_view]
    assert [o for o in out if any(o is b for b in big)] == big  # handed on, not copied
    assert all(len(o) for o in out)
    # no two small pieces side by side: they were joined
    small = [len(o) < min_view for o in out]
    assert not any(a and b for a, b in itertools.pairwise(small))


def _ring_view(n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``n`` open records as a strided view of a byte buffer, as a ring lease gives."""
    stride = LAYOUT.event.itemsize + 8
    ring = np.zeros(n * stride + 8, np.uint8)
    view = np.ndarray((n,), dtype=LAYOUT.event, buffer=ring[8:], strides=(stride,))
    view["h"]["type"] = OPEN
    view["h"]["pid"] = np.arange(100, 100 + n)
    view["h"]["ts"] = np.arange(1, n + 1)
    return ring, view


def test_the_recent_store_keeps_copies() -> None:
    ring, view = _ring_view(6)
    store = RecentEvents(LAYOUT.event, [OPEN], per_pid=4, total=64)
    store.add_batch(view)
    ring[:] = 0xFF  # the producer writes over the consumed space
    kept = store.select()
    assert sorted(kept["h"]["pid"].tolist()) == list(range(100, 106))
    assert (kept["h"]["type"] == OPEN).all()


def test_the_export_batches_keep_copies() -> None:
    ring, view = _ring_view(10)
    view["h"]["cpu"] = 1
    batches = Batcher(LAYOUT.type_names, batch_events=4).split(Records(view))
    ring[:] = 0xFF
    got = np.concatenate([b.data for b in batches])
    assert got["h"]["pid"].tolist() == list(range(100, 110))
    assert not any(np.shares_memory(b.data, ring) for b in batches)
