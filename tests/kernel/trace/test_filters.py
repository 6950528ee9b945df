"""The -c/-p filters run before anything is reserved (a rejected event takes no ring
space and wakes no one).

For any filter, ``events + dropped + lost`` must equal the matching events that were
generated: a rejected event never takes ring space (so it can't push a matching one
out and be counted as a drop) and never wakes the consumer (a reserve + discard
would: the kernel wakes the reader on a discard too).

The workload processes are real: a child names itself with prctl(PR_SET_NAME), tells
the test it is ready, waits for "go" on stdin, then does exactly its N operations
and leaves with _exit (no teardown syscalls or opens after the loop).
"""

from __future__ import annotations

import json
import select
import signal
import time
from pathlib import Path

import pytest

from ringtool.event.layout import load_layout
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.trace import Trace, Worker, counts, session, unique_comm

pytestmark = pytest.mark.kernel

# (source, filter kind, worker op, matching events per worker op count n)
CASES = [
    ("open", "comm", "open", lambda n: n),
    ("open", "pid", "open", lambda n: n),
    # fork: n forks by the worker; the children inherit its comm, so with -c each
    # child's exit matches too, and the worker's own exit once
    ("exec", "comm", "fork", lambda n: 2 * n + 1),
    # with -p only the worker's own events: n forks and its exit
    ("exec", "pid", "fork", lambda n: n + 1),
]


@pytest.mark.parametrize(("source", "kind", "op", "expected"), CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])  # fmt: skip
def test_events_plus_drops_equal_the_matching_events_on_a_tiny_ring(
    tmp_path: Path, source: str, kind: str, op: str, expected: object
) -> None:
    target = tmp_path / "hot"
    target.write_text("x")
    n, m = 1500, 6000
    match = Worker(unique_comm(), op, target, n)
    other = Worker(unique_comm(), op, target, m)
    filt = {"comm": match.name} if kind == "comm" else {"pid": match.pid}
    opts = TraceOptions(events=(source,), buffer_pages=1, **filt)  # type: ignore[arg-type]
    with session(opts) as s:
        # the consumer reads nothing while both run: the 4 KiB rings overflow
        other.go()
        match.go()
        other.wait()
        match.wait()
        records, dropped, lost = counts(s)
    comms = {bytes(c).decode() for c in records["h"]["comm"]}
    assert comms <= {match.name}, comms
    if kind == "pid":
        assert set(records["h"]["pid"].tolist()) <= {match.pid}
    if source == "open":
        assert {bytes(p).decode() for p in records["data"]} <= {str(target)}
    assert dropped > 0  # the tiny ring did overflow: the invariant was tested under load
    assert len(records) + dropped + lost == expected(n)  # type: ignore[operator]


@pytest.mark.parametrize("kind", ["comm", "pid"])
def test_non_matching_load_reserves_nothing_and_never_wakes_the_consumer(
    tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "hot"
    target.write_text("x")
    idle = Worker(unique_comm(), "open", target, 0)  # matches, but does nothing
    filt = {"comm": idle.name} if kind == "comm" else {"pid": idle.pid}
    opts = TraceOptions(events=("exec", "open", "syscalls"), slow_ms=0.0, **filt)  # type: ignore[arg-type]
    with session(opts) as s:
        assert s.rb is not None
        opener = Worker(unique_comm(), "open", target, 3000)
        forker = Worker(unique_comm(), "fork", target, 200)
        opener.go()
        forker.go()
        opener.wait()
        forker.wait()
        # the kernel's ring producer position moves on every reserve (a discarded
        # record too) and the epoll fd is readable as soon as it differs from the
        # consumer's: neither may have happened
        assert [s.rb.ring(i).producer_pos for i in range(s.rb.ring_cnt)] == [0] * s.rb.ring_cnt
        assert select.select([s.rb.epoll_fd()], [], [], 0)[0] == []
        records, dropped, lost = counts(s)
        assert len(records) == 0 and dropped == 0 and lost == 0
        assert all(v == 0 for per_cpu in s.dropped_per_source().values() for v in per_cpu)
    idle.go()
    idle.wait()


def test_cli_comm_filter_under_load_reports_only_matching_drops(tmp_path: Path) -> None:
    """The issue's reproduction: `trace -c X` with a stalled consumer while a
    non-matching process opens far more files. The summary's events + dropped + lost
    is exactly X's opens (before the fix it was about all opens)."""
    target = tmp_path / "hot"
    target.write_text("x")
    n, m = 2000, 20000
    match = Worker(unique_comm(), "open", target, n)
    other = Worker(unique_comm(), "open", target, m)
    proc = Trace("--json", "-c", match.name, "--events", "open", "--buffer-pages", "1",
                 "--interval", "0.5")  # fmt: skip
    proc.signal(signal.SIGSTOP)  # the consumer stalls: its 4 KiB rings overflow
    try:
        other.go()
        match.go()
        other.wait()
        match.wait()
    finally:
        proc.signal(signal.SIGCONT)
    time.sleep(1.0)
    proc.signal(signal.SIGINT)
    out, _ = proc.finish()
    objs = [json.loads(line) for line in out if line.strip()]
    summary = objs[-1]
    opens = [o for o in objs if o["type"] == "open"]
    assert opens and all(o["comm"] == match.name and o["path"] == str(target) for o in opens)
    assert summary["events"] == len(opens) and summary["dropped"] > 0
    assert summary["events"] + summary["dropped"] + summary["lost"] == n


def test_net_says_the_process_filters_do_not_apply(veth: str) -> None:
    """TC programs run without a task, so -p/-c cannot filter packets: say so."""
    opts = TraceOptions(events=("net",), iface=veth, comm="nobody-matches")
    s = TraceSession(opts, load_layout())
    try:
        assert s.net is not None
        assert s.notes == [
            f"source net: -p/-c/-t/-u/--cgroup do not apply to packets; all of {veth} is traced"
        ]
    finally:
        s.close()
