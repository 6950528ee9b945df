"""The dashboard's per-process store of recent events (no kernel): bounded per process
and in all, the newest kept, each process's records in time order, a quiet process's
events kept however busy the others are."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.trace.dashboard.tui_recent import RecentEvents
from tests.helpers.stats import LAYOUT

OPEN, EXEC, SYSCALL = LAYOUT.type_id("open"), LAYOUT.type_id("exec"), LAYOUT.type_id("syscall")


def _batch(rows: list[tuple[int, int, int]]) -> np.ndarray[Any, Any]:
    """Records of ``(pid, ts, type)``."""
    arr = np.zeros(len(rows), dtype=LAYOUT.event)
    if rows:
        pid, ts, typ = zip(*rows, strict=True)
        arr["h"]["pid"], arr["h"]["ts"], arr["h"]["type"] = pid, ts, typ
    return arr


def _store(per_pid: int, total: int) -> RecentEvents:
    return RecentEvents(LAYOUT.event, [OPEN, EXEC], per_pid=per_pid, total=total)


def test_a_quiet_process_keeps_its_events_beside_a_busy_one() -> None:
    store = _store(per_pid=16, total=64)
    ts = 0
    for second in range(10):  # the quiet one: 1 open per batch; the busy one: 5,000
        rows = [(2, ts + i, OPEN) for i in range(5000)]
        rows.insert(2500, (7, ts + 2500, OPEN))
        store.add_batch(_batch(rows))
        ts += 10_000
        assert second + 1 == len(store.select([7]))
    quiet = store.select([7])
    assert quiet["h"]["ts"].tolist() == [i * 10_000 + 2500 for i in range(10)]
    busy = store.select([2])["h"]["ts"]
    assert len(busy) == 16 and busy[-1] == 9 * 10_000 + 4999  # its newest 16
    assert len(store) <= 64


def test_many_processes_do_not_push_a_quiet_one_out() -> None:
    """Over the total, the busy processes give up records, not the quiet one."""
    store = _store(per_pid=32, total=256)
    store.add_batch(_batch([(1, 0, OPEN), (1, 1, OPEN)]))  # the quiet one, long ago
    for b in range(50):  # 40 busy processes, 32 records each per batch
        store.add_batch(_batch([(100 + p, 10 + b * 100 + i, OPEN) for p in range(40)
                                for i in range(32)]))  # fmt: skip
    assert store.select([1])["h"]["ts"].tolist() == [0, 1]
    assert len(store) <= 256 and len(store.select([100])) == (256 - 2) // 40


def test_only_the_types_asked_for_and_forget() -> None:
    store = _store(per_pid=4, total=100)
    store.add_batch(_batch([(1, 1, SYSCALL), (1, 2, OPEN), (2, 3, EXEC), (3, 4, SYSCALL)]))
    assert store.select()["h"]["pid"].tolist() == [1, 2]
    store.forget([1])
    assert store.select()["h"]["pid"].tolist() == [2]
    frozen = store.frozen()
    store.add_batch(_batch([(2, 9, OPEN)]))
    assert len(frozen.select([2])) == 1 and len(store.select([2])) == 2


batches = st.lists(
    st.lists(
        st.tuples(st.integers(1, 6), st.integers(0, 50), st.sampled_from([OPEN, EXEC, SYSCALL])),
        max_size=40,
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(batches, st.integers(1, 8), st.integers(1, 30))
def test_bounded_newest_kept_in_order(
    batches: list[list[tuple[int, int, int]]], per_pid: int, total: int
) -> None:
    """Whatever the batches (records of a batch in any time order, as from several
    CPUs; a later batch newer): at most ``per_pid`` per process and ``total`` in all;
    each process's records in time order; what is kept of a process is its newest (no
    record of it left out is newer than one kept); while there are no more processes
    than ``total``, none loses all of its records."""
    store = _store(per_pid, total)
    seen: dict[int, list[int]] = defaultdict(list)
    for b, rows in enumerate(batches):
        rows = [(pid, b * 100 + ts, typ) for pid, ts, typ in rows]
        store.add_batch(_batch(rows))
        for pid, ts, typ in rows:
            if typ != SYSCALL:
                seen[pid].append(ts)
    every = store.select()
    assert len(every) <= total
    assert every["h"]["ts"].tolist() == sorted(every["h"]["ts"].tolist())
    for pid, stamps in seen.items():
        kept = store.select([pid])["h"]["ts"].tolist()
        assert len(kept) <= per_pid
        assert kept == sorted(kept)
        newest = sorted(stamps)[len(stamps) - len(kept) :]
        assert kept == newest  # the newest of it (ties: equal values)
        if len(seen) * per_pid <= total:  # nothing forgotten for the total's sake
            assert len(kept) == min(per_pid, len(stamps))
        if len(seen) <= total:
            assert kept, pid
