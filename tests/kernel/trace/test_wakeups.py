"""Adaptive wakeups: records wake the reader only when their CPU's
ring crosses ``wakeup_fill``; :meth:`TraceSession.wait` polls so nothing waits long.

The bounds below are generous on purpose (seconds against a 0.05 s poll): they catch
a reader that would sleep for the whole timeout, not a slow machine.
"""

from __future__ import annotations

import os
import select
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ringtool.errors import ArgumentError
from ringtool.event.layout import load_layout
from ringtool.trace.reading.cflags import wakeup_bytes
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.trace import Worker, counts, drain, session, unique_comm

pytestmark = pytest.mark.kernel


def test_wait_polls_within_the_latency_bound() -> None:
    opts = TraceOptions(events=("open",), comm=unique_comm(), max_latency_s=0.05)
    with session(opts) as s:
        t0 = time.monotonic()
        assert s.wait(60.0) == []  # nothing matches: only the poll bound ends it
        assert time.monotonic() - t0 < 30


def test_a_record_below_the_threshold_is_read_by_the_next_poll(tmp_path: Path) -> None:
    worker = Worker(unique_comm(), "open", tmp_path, 1)
    with session(TraceOptions(events=("open",), pid=worker.pid)) as s:
        worker.go()
        worker.wait()
        s.wait(60.0)
        records = drain(s)
    assert len(records) == 1 and records[0]["h"]["pid"] == worker.pid


def test_crossing_the_threshold_wakes_a_sleeping_reader(tmp_path: Path) -> None:
    """A reader asleep in epoll (not TraceSession.wait's capped poll) is woken by the
    record that takes its CPU's ring past the threshold."""
    opts = TraceOptions(events=("open",), buffer_pages=4, wakeup_fill=0.05)
    worker = Worker(unique_comm(), "open", tmp_path, 200)
    os.sched_setaffinity(worker.pid, {0})  # all records into CPU 0's ring
    with session(replace(opts, pid=worker.pid)) as s:
        assert s.rb is not None
        woke: list[float] = []
        epfd = s.rb.epoll_fd()
        sleeper = threading.Thread(
            target=lambda: woke.append(bool(select.select([epfd], [], [], 60)[0]) and
                                       time.monotonic()),
        )  # fmt: skip
        sleeper.start()
        time.sleep(0.3)  # let it fall asleep on the empty rings
        t0 = time.monotonic()
        worker.go()
        worker.wait()
        sleeper.join(60)
        assert woke and woke[0] and woke[0] - t0 < 30
        records, dropped, _ = counts(s)
    assert len(records) + dropped == 200


@pytest.mark.parametrize("fill", [None, 0.25, 1.0])
def test_accounting_is_exact_in_every_wakeup_mode(tmp_path: Path, fill: float | None) -> None:
    """A live reader this time, on a tiny ring: read + dropped + lost == generated."""
    n = 3000
    worker = Worker(unique_comm(), "open", tmp_path, n)
    opts = TraceOptions(events=("open",), comm=worker.name, buffer_pages=1, wakeup_fill=fill)
    read = 0
    with session(opts) as s:
        worker.go()
        while worker.proc.poll() is None:
            s.wait(1.0)
            read += len(s.read_events())
        worker.wait()
        records, dropped, lost = counts(s)
    assert read + len(records) + dropped + lost == n


def test_wakeup_fill_out_of_range_is_an_argument_error() -> None:
    assert wakeup_bytes(4096, 0.25) == 1024 and wakeup_bytes(4096, 1e-9) == 1
    for bad in (0.0, -1.0, 1.5, float("nan")):
        with pytest.raises(ArgumentError, match="wakeup_fill"):
            wakeup_bytes(4096, bad)
    with pytest.raises(ArgumentError, match="wakeup_fill"):
        TraceSession(TraceOptions(events=("open",), wakeup_fill=2.0), load_layout())
