"""The bridge's log lines without a bridge: :class:`ConsumerLog` fed the pids of real
child processes (pidfds on real processes, real ``/proc/PID/comm``), and the periodic
:class:`RateLine` with a given clock."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ringtool.bridge.consumers import ConsumerLog, proc_comm
from ringtool.cli.bridge import RateLine

# A child that renames itself (prctl PR_SET_NAME, what `comm` shows) and waits on stdin.
NAMED_CHILD = """
import ctypes, sys
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def named(procs: list[subprocess.Popen[str]], comm: str) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-c", NAMED_CHILD, comm],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    procs.append(p)
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    return p


def test_attach_repeat_and_detach(children: list[subprocess.Popen[str]]) -> None:
    log = ConsumerLog()
    p = named(children, "reader-one")
    log.attached(p.pid, 1000)
    assert log.poll() == [f"consumer attached: pid {p.pid} (reader-one), uid 1000"]
    log.attached(p.pid, 1000)  # a re-attach of the same live process: counted, no line
    log.attached(p.pid, 1000)
    assert log.poll() == []
    assert log.consumers[p.pid].requests == 3
    assert log.poll() == []  # still running: no detach
    p.kill()
    p.wait(10)
    (line,) = log.poll()
    assert line.startswith(f"consumer detached: pid {p.pid} (reader-one) exited after ")
    assert line.endswith(", 3 attach requests")
    assert log.consumers == {} and log.attaches == 1 and log.detaches == 1


def test_comm_with_escape_sequences_is_shown_escaped(children: list[subprocess.Popen[str]]) -> None:
    p = named(children, "\x1b[2J\x1b]52;c;x\x07\r")  # clear screen, OSC 52, CR: 15 bytes
    log = ConsumerLog()
    log.attached(p.pid, 0)
    (line,) = log.poll()
    assert line.isprintable(), repr(line)
    assert "\\x1b[2J\\x1b]52;c;x\\x07\\x0d" in line
    assert proc_comm(p.pid).isprintable()


def test_exited_before_poll_and_untracked(children: list[subprocess.Popen[str]]) -> None:
    log = ConsumerLog(max_tracked=1)
    a, b = named(children, "first"), named(children, "second")
    gone = subprocess.Popen(["/bin/true"])
    log.attached(gone.pid, 0)  # pidfd opened while it lives ... (or already zombie)
    gone.wait(10)  # ... reaped now: the pidfd reports the exit
    log.attached(a.pid, 0)
    log.attached(b.pid, 0)
    lines = log.poll()
    assert lines == [
        f"consumer attached and exited: pid {gone.pid}, uid 0",
        f"consumer attached: pid {a.pid} (first), uid 0",
        f"consumer attached: pid {b.pid} (second), uid 0 (untracked: 1 consumers watched already)",
    ]
    assert list(log.consumers) == [a.pid]
    log.close()
    assert log.consumers == {}


def test_pidfds_are_closed(children: list[subprocess.Popen[str]]) -> None:
    procs = [named(children, f"c{i}") for i in range(5)]
    before = len(os.listdir("/proc/self/fd"))
    log = ConsumerLog()
    for p in procs:
        log.attached(p.pid, 0)
        log.attached(p.pid, 0)  # the duplicate's pidfd is closed by poll()
    assert len(log.poll()) == 5
    for p in procs[:3]:
        p.kill()
        p.wait(10)
    assert len(log.poll()) == 3
    log.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_rate_line_reports_deltas_per_interval() -> None:
    rate = RateLine(10.0, now=100.0)
    assert rate.due(105.0, events=50, lost=0, consumers=1) is None
    assert rate.due(110.0, events=12_340, lost=3, consumers=1) == (
        "12,340 events in 10.0 s (1,234/s), 3 lost in the kernel, 1 consumer"
    )
    assert rate.due(115.0, events=12_345, lost=3, consumers=2) is None
    assert rate.due(120.0, events=12_345, lost=3, consumers=2) == (
        "5 events in 10.0 s (0.5/s), 0 lost in the kernel, 2 consumers"
    )
