"""The cpuwait source (bpf/trace_cpuwait.c) on threads competing for one CPU, against
the kernel's own accounting and beside libbpf-tools' runqlat.

The workload (tests/helpers/cpuwait_workload.py) is one process whose 3 threads each
do the same CPU-bound work pinned to one CPU, so they wait for it in turns (and for
whatever else runs there). ``ringtool trace --events cpuwait -p PID --slow-ms 0.001``
counts the process's waits in its histogram and, every wait of 1 µs or more, also
as an event with its exact length (0.1 µs): the test checks the histogram against
those events, each thread's events against the scheduler's own run_delay
(/proc/.../schedstat: the kernel's accounting of the same wait, from the run queue's
clock), and the histogram against runqlat -p PID's, row for row.

Why runqlat's rows and ours may differ at all, and by how much: both programs take
the same tracepoints (sched_wakeup, sched_wakeup_new, sched_switch) and the same
rule (bpf/trace_cpuwait.c), so they count the very same waits: the totals are equal.
Each takes its own timestamps, one program run apart at the enqueue and at the
switch, so a wait's two measures differ by less than :data:`JITTER_NS` (a program run
is well under a microsecond: ``ringtool bench trace``); a wait that close to a row's
edge may be counted one row up or down by the other. So for every edge E the number
of waits below E may differ by at most the number of our waits within JITTER_NS of
E (known exactly from the events; the waits under 1 µs, which are no event, lie
under every edge but 0 -> 1's top by far more than the jitter).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import time
from typing import Any

import pytest

from tests.helpers.cpuwait_workload import CpuWaitWorkload, one_cpu
from tests.helpers.procs import Lines, stop
from tests.helpers.trace import Trace, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.all_kernels]

#: The largest difference between two programs' measures of one wait (see the doc).
JITTER_NS = 5_000
#: An event's wait_us is rounded to 0.1 µs: within this of the wait.
ROUNDING_NS = 50
#: The largest difference per wait between a wait as the tracepoints time it and as
#: the scheduler's run_delay counts it: run_delay runs on the run queue's clock
#: (rq_clock, updated at the scheduler's own points, not read at the tracepoint), and
#: begins at the enqueue, a few steps before sched_wakeup fires.
SCHEDSTAT_NS = 20_000

Row = tuple[int, int, int]  # low us, high us (inclusive), count


def traced(work: CpuWaitWorkload, *extra: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The workload's thread reports and every JSON line of ``ringtool trace --events
    cpuwait -p PID --slow-ms 0.001 --json --hist`` that watched it all."""
    trace = Trace("--events", "cpuwait", "-p", str(work.pid), "--slow-ms", "0.001", "--json",
                  "--hist", *extra)  # fmt: skip
    try:
        threads = work.run()
    finally:
        stop(work.proc)
        trace.signal(signal.SIGINT)
        lines, _ = trace.finish()
    return threads, [json.loads(line) for line in lines]


def rows_of(hist: dict[str, Any]) -> list[Row]:
    """A ``cpuwait_hist`` record's buckets as runqlat's rows: slot 0 (under 1 µs) and
    slot 1 (1 µs) are its one row ``0 -> 1``."""
    merged: dict[tuple[int, int], int] = {}
    for low, high, n in hist["buckets_us"]:
        key = (0, 1) if high <= 1 else (low, high)
        merged[key] = merged.get(key, 0) + n
    return [(low, high, n) for (low, high), n in sorted(merged.items())]


def rows_from_waits(waits_ns: list[int], under_1us: int) -> list[Row]:
    """The rows of exact waits (ns), with ``under_1us`` more in ``0 -> 1``."""
    merged: dict[tuple[int, int], int] = {(0, 1): under_1us} if under_1us else {}
    for w in waits_ns:
        us = w // 1000
        slot = max(us.bit_length(), 1)
        key = (0, 1) if slot == 1 else (1 << (slot - 1), (1 << slot) - 1)
        merged[key] = merged.get(key, 0) + 1
    return [(low, high, n) for (low, high), n in sorted(merged.items())]


def test_histogram_events_and_the_schedulers_own_accounting_agree() -> None:
    work = CpuWaitWorkload(unique_comm(), one_cpu())
    threads, out = traced(work)
    events = [e for e in out if e["type"] == "cpuwait"]
    hists = {h["pid"]: h for h in out if h["type"] == "cpuwait_hist"}
    ours = hists[work.pid]
    assert set(hists) == {0, work.pid}, hists  # -p: the machine's is the process's
    assert {e["pid"] for e in events} == {work.pid} and ours["comm"] == work.name, events
    # every wait of 1 µs or more is an event: the histogram is theirs, plus the shorter
    waits = [round(e["wait_us"] * 1000) for e in events]
    under = ours["count"] - len(waits)
    assert 0 <= under <= sum(n for low, high, n in rows_of(ours) if high <= 1), ours
    # (an event's wait_us is rounded to 0.1 µs: one within 50 ns of an edge may lie on
    # either side of it)
    assert_rows_agree(rows_of(ours), rows_from_waits(waits, under), waits, ROUNDING_NS)
    assert abs(ours["total_wait_ns"] - sum(waits)) <= 100 * len(waits) + 1000 * under
    # each thread waited as the scheduler counted it (run_delay: since its creation,
    # read at its end; our events: also the few waits after that read, before it ended)
    summary = next(e for e in out if e["type"] == "summary")
    for t in threads:
        mine = [round(e["wait_us"] * 1000) for e in events if e["tid"] == t["tid"]]
        assert mine, t
        assert t["run_delay_ns"] - SCHEDSTAT_NS * len(mine) <= sum(mine), (t, mine)
        assert sum(mine) <= t["run_delay_ns"] + SCHEDSTAT_NS * len(mine) + max(mine), (t, mine)
    assert summary["cpuwait"]["count"] == ours["count"], summary


def assert_rows_agree(ours: list[Row], theirs: list[Row], waits: list[int], near_ns: int) -> None:
    """Histograms of the same waits measured twice, each measure within ``near_ns`` of
    the other: for every row's edge, the waits below it differ by at most the number
    of ``waits`` (ns, ours) within ``near_ns`` of it; the totals are equal."""
    assert sum(n for *_, n in ours) == sum(n for *_, n in theirs), (ours, theirs)
    for edge in sorted({high + 1 for _, high, _ in ours + theirs}):
        below_ours = sum(n for _, high, n in ours if high < edge)
        below_theirs = sum(n for _, high, n in theirs if high < edge)
        near = sum(1 for w in waits if abs(w - edge * 1000) <= near_ns)
        assert abs(below_ours - below_theirs) <= near, (edge, near, ours, theirs)


RUNQLAT_ROW = re.compile(r"^\s*(\d+)\s*->\s*(\d+)\s*:\s*(\d+)\s")


def runqlat_rows(lines: list[str]) -> list[Row]:
    """runqlat's histogram rows, the empty ones left out."""
    rows = [tuple(int(x) for x in m.groups()) for line in lines if (m := RUNQLAT_ROW.match(line))]
    return [(low, high, n) for low, high, n in rows if n]


def test_the_same_histogram_as_runqlat() -> None:
    runqlat = shutil.which("runqlat")
    assert runqlat, "runqlat is not installed: scripts/setup.sh installs libbpf-tools"
    work = CpuWaitWorkload(unique_comm(), one_cpu())
    peer = Lines(["stdbuf", "-oL", runqlat, "-p", str(work.pid)])
    try:
        deadline = time.monotonic() + 120
        while not any(line.startswith("Tracing") for line in list(peer.lines)):
            assert peer.proc.poll() is None, peer.err
            assert time.monotonic() < deadline, "runqlat did not start"
            time.sleep(0.1)
        _threads, out = traced(work)
    finally:
        stop(peer.proc, signal.SIGINT)
        peer.join()
    theirs = runqlat_rows(peer.lines)
    ours_record = next(h for h in out if h["type"] == "cpuwait_hist" and h["pid"] == work.pid)
    ours = rows_of(ours_record)
    waits = [round(e["wait_us"] * 1000) for e in out if e["type"] == "cpuwait"]
    assert sum(n for *_, n in theirs) == ours_record["count"], (theirs, ours)
    assert_rows_agree(ours, theirs, waits, JITTER_NS + ROUNDING_NS)
