"""Trace rings that grow instead of dropping (ringtool.trace.reading.ring_growth) on real
tracepoints: a worker process whose opens are counted exactly (a comm of its own) is
traced while the trace reads, or not, and the accounting ``events + dropped + lost ==
produced`` is checked after bursts that overflow the rings, across switches."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.trace import Worker, drain, session, unique_comm

pytestmark = pytest.mark.kernel

PAGE = 4096


def _settle(
    s: TraceSession,
    parts: list[np.ndarray],  # type: ignore[type-arg]
    until: float = 0.3,
    read: Callable[[], Any] | None = None,
) -> None:
    """Read (``read``, else ``s.read_events``) and run the growth checks until no
    switch is in flight (and ``until`` s)."""
    assert s.growth is not None
    read = s.read_events if read is None else read
    end = time.monotonic() + until
    deadline = time.monotonic() + 30
    while time.monotonic() < end or s.growth.resizer._switches:
        assert time.monotonic() < deadline, "a switch did not end"
        s.wait(0.005)
        parts.append(read())


def _burst(tmp_path: Path, comm: str, n: int, *, pin: int | None = None) -> Worker:
    worker = Worker(comm, "open", tmp_path / "hot", n)
    if pin is not None:
        os.sched_setaffinity(worker.pid, {pin})
    return worker


def _accounted(s: TraceSession, parts: list[np.ndarray], produced: int) -> int:  # type: ignore[type-arg]
    parts.append(drain(s))
    got = int(sum(len(p) for p in parts))
    dropped = sum(s.dropped_per_cpu())
    assert got + dropped + sum(s.lost_per_cpu().values()) == produced, (got, dropped, produced)
    return dropped


def test_a_burst_over_the_default_ring_is_counted_exactly(tmp_path: Path) -> None:
    """Growth off, the CLI's default ring (128 pages), nothing read during the burst:
    what the ring could not hold is counted dropped, the rest is read."""
    (tmp_path / "hot").write_text("x")
    comm = unique_comm()
    with session(TraceOptions(events=("open",), comm=comm, buffer_pages=128)) as s:
        worker = _burst(tmp_path, comm, 20_000)
        worker.go()
        worker.wait()
        assert _accounted(s, [], 20_000) > 0  # the ring overflowed


def test_with_growth_drops_stop_after_the_switches(tmp_path: Path) -> None:
    """Bursts of 4,000 opens (1.4 MB of records) with the reader paused: the 512 KiB
    ring drops and grows (fourfold after a drop), and then holds a whole burst."""
    (tmp_path / "hot").write_text("x")
    comm = unique_comm()
    opts = TraceOptions(events=("open",), comm=comm, buffer_pages=128,
                        max_buffer_bytes=256 << 20)  # fmt: skip
    drops = []
    parts: list[np.ndarray] = []  # type: ignore[type-arg]
    cpu = min(os.sched_getaffinity(0))  # growth is per CPU: every burst on the same one
    with session(opts) as s:
        for _ in range(5):
            worker = _burst(tmp_path, comm, 4000, pin=cpu)
            worker.go()
            worker.wait()
            before = sum(s.dropped_per_cpu())
            _settle(s, parts)
            drops.append(sum(s.dropped_per_cpu()) - before if drops else before)
        _accounted(s, parts, 5 * 4000)
        record = s.rings_record()
    assert record is not None
    grown = sum(r["grown"] for r in record["per_cpu"])
    assert drops[0] > 0 and grown >= 1, (drops, record)
    assert drops[-2:] == [0, 0], drops
    assert any("ring grown 512 KiB -> " in n and "nothing lost" in n for n in s.notes)


def _numbered(parts: list[np.ndarray]) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    """(round, number) of each ``.../ROUND/NUMBER`` open among the records, in order."""
    arr = np.concatenate(parts) if parts else np.empty(0)
    names = [bytes(d).split(b"\0", 1)[0].rsplit(b"/", 2)[-2:] for d in arr["data"]]
    return [(int(r), int(n)) for r, n in names if r.isdigit() and n.isdigit()]


@pytest.mark.parametrize("ordered", [False, True], ids=["batches", "ordered"])
def test_switches_under_load_lose_and_repeat_nothing(tmp_path: Path, ordered: bool) -> None:
    """Rounds of a worker pinned to one CPU opening ROUND/0, ROUND/1, ... (missing
    files: failed opens are traced too) while the trace reads, its 8-page rings grow
    (the policy) and the test moves that CPU's ring to another size whenever no switch
    is in flight: every (round, number) is read once or counted dropped; in timestamp
    order they come in order. Rounds go on until three switches ended (at most six:
    how many one round sees depends on the machine's speed, an emulated CPU's above
    all, where one growth was once all it took)."""
    n = 10_000
    comm = unique_comm()
    opts = TraceOptions(events=("open",), comm=comm, buffer_pages=8,
                        max_buffer_bytes=64 << 20)  # fmt: skip
    parts: list[np.ndarray] = []  # type: ignore[type-arg]
    cpu = min(os.sched_getaffinity(0))
    rounds = 0
    with session(opts) as s:
        assert s.growth is not None and s.group is not None
        resizer, bid = s.growth.resizer, s.group.layout.cpu_to_buffer[cpu]
        reader = s.ordered_reader(None) if ordered else None
        read: Callable[[], Any] = reader.read if reader is not None else s.read_events
        while rounds < 6 and s.growth.record()["switches"] < 3:
            worker = Worker(comm, "seq", tmp_path / str(rounds), n)
            os.sched_setaffinity(worker.pid, {cpu})
            worker.go()
            while worker.proc.poll() is None:
                if not resizer.busy(bid):  # the other size: up to 256 KiB, then down
                    size = s.group.ring_size(bid)
                    resizer.resize(bid, size * 2 if size < 64 * PAGE else size // 4)
                s.wait(0.002)
                parts.append(read())
            worker.wait()
            rounds += 1
            _settle(s, parts, 0.0, read)
        for _ in range(5):
            s.wait(0.002)
            parts.append(read() if reader is None else reader.read(final=True))
        seen = _numbered(parts)
        dropped = sum(s.dropped_per_cpu())
        record = s.rings_record()
    assert record is not None and record["switches"] >= 3, (rounds, record)
    assert len(seen) == len(set(seen)), "an event read twice"
    assert len(seen) + dropped == rounds * n, (len(seen), dropped, rounds)
    if ordered:
        assert seen == sorted(seen), "out of order across a switch"


def test_growth_stops_at_the_cap_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "hot").write_text("x")
    comm = unique_comm()
    base = 16 * PAGE
    ncpu = len(os.sched_getaffinity(0))
    cap = (ncpu + 2) * base  # room for one CPU's ring to double (old and new), once
    opts = TraceOptions(events=("open",), comm=comm, buffer_pages=16, max_buffer_bytes=cap)
    parts: list[np.ndarray] = []  # type: ignore[type-arg]
    with session(opts) as s:
        cpu = min(os.sched_getaffinity(0))
        for _ in range(3):
            worker = _burst(tmp_path, comm, 2000, pin=cpu)
            worker.go()
            worker.wait()
            _settle(s, parts, until=0.2)
        _accounted(s, parts, 3 * 2000)
        record = s.rings_record()
    assert record is not None and record["bytes"] <= cap
    sizes = {r["cpu"]: r["bytes"] for r in record["per_cpu"]}
    assert sizes[cpu] == 2 * base, record
    capped = [n for n in s.notes if "ring stays at 128 KiB" in n]
    assert len(capped) == 1 and "--max-buffer-mb" in capped[0], s.notes


def test_an_idle_ring_shrinks_back(tmp_path: Path) -> None:
    (tmp_path / "hot").write_text("x")
    comm = unique_comm()
    opts = TraceOptions(events=("open",), comm=comm, buffer_pages=16,
                        max_buffer_bytes=64 << 20, ring_quiet_s=0.5)  # fmt: skip
    parts: list[np.ndarray] = []  # type: ignore[type-arg]
    cpu = min(os.sched_getaffinity(0))
    with session(opts) as s:
        worker = _burst(tmp_path, comm, 3000, pin=cpu)
        worker.go()
        worker.wait()
        _settle(s, parts, until=0.1)
        record = s.rings_record()
        assert record is not None
        grown = {r["cpu"]: r for r in record["per_cpu"]}[cpu]
        assert grown["grown"] >= 1 and grown["bytes"] > 16 * PAGE, record
        deadline = time.monotonic() + 30
        while s.growth is not None and s.group is not None:
            _settle(s, parts, until=0.2)
            if s.group.ring_size(s.group.layout.cpu_to_buffer[cpu]) == 16 * PAGE:
                break
            assert time.monotonic() < deadline, s.notes
        _accounted(s, parts, 3000)
        record = s.rings_record()
    assert record is not None
    row = {r["cpu"]: r for r in record["per_cpu"]}[cpu]
    assert row["bytes"] == 16 * PAGE and row["shrunk"] >= row["grown"] >= 1, record
    assert any("ring shrunk" in n and "idle" in n for n in s.notes), s.notes
