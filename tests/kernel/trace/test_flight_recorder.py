"""``ringtool trace --flight-recorder SIZE`` for real: nothing is written while tracing,
SIGUSR1 writes the newest events the kernel kept, the end of the run writes the rest,
and no event twice. On this kernel the perf write_backward rings (no RINGBUF overwrite
mode); on Linux 6.19+ the overwrite RINGBUF group."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time

import pytest

from tests.helpers.cpus import pinned
from tests.helpers.trace import Trace, told_json

pytestmark = pytest.mark.kernel

#: BCC compiles the exec source before the start line: up to a minute or more in an
#: emulated guest on a loaded machine (Debian's newest kernel runs under QEMU TCG)
START = 240


def marked(lines: list[str], tag: str) -> list[int]:
    """The numbers of the ``/bin/true TAG-N`` execs among the JSON event lines."""
    out = []
    for line in lines:
        ev = json.loads(line)
        for arg in ev.get("argv", [])[1:]:
            if arg.startswith(tag + "-"):
                out.append(int(arg.split("-")[-1]))
    return out


def run_marked(tag: str, numbers: range, cpu: int | None = None) -> None:
    """Exec ``/bin/true TAG-N`` for each N; with ``cpu``, every exec on that CPU."""
    # the children inherit the CPU, exec balancing too
    with pinned(os.sched_getaffinity(0) if cpu is None else {cpu}):
        for i in numbers:
            subprocess.run(["/bin/true", f"{tag}-{i}"], check=True)


def wait_for(trace: Trace, tag: str, n: int) -> list[int]:
    deadline = time.monotonic() + 60
    while n not in marked(list(trace.lines), tag):
        assert trace.proc.poll() is None, trace.err
        assert time.monotonic() < deadline, f"event {n} not written: {trace.err}"
        time.sleep(0.05)
    return marked(list(trace.lines), tag)


def test_sigusr1_dumps_then_the_exit_dumps_the_rest() -> None:
    tag = "fr" + secrets.token_hex(4)
    trace = Trace(
        "--json",
        "--stats",
        "--events",
        "exec",
        "-c",
        "true",
        "--flight-recorder",
        "64K",
        start_timeout=START,
    )
    try:
        run_marked(tag, range(3))
        n_stats = len([m for m in told_json(trace.err) if m.get("type") == "stats"])
        while len([m for m in told_json(trace.err) if m.get("type") == "stats"]) <= n_stats:
            time.sleep(0.05)  # a tick of the loop went by: still nothing written
        assert marked(list(trace.lines), tag) == []
        trace.signal(signal.SIGUSR1)
        assert wait_for(trace, tag, 2) == [0, 1, 2]
        run_marked(tag, range(3, 5))
    finally:
        trace.signal(signal.SIGINT)
    lines, err = trace.finish()
    assert marked(lines, tag) == [0, 1, 2, 3, 4]  # each once, oldest first
    assert "flight recorder: 64 KiB a CPU" in err


def test_the_newest_events_are_kept_when_more_than_size_came() -> None:
    tag = "fr" + secrets.token_hex(4)
    trace = Trace(
        "--json", "--events", "exec", "-c", "true", "--flight-recorder", "4K", start_timeout=START
    )
    try:
        # ~350 bytes an event: far more than 4 KiB, all on one CPU. (Unpinned, the
        # execs spread over the CPUs, and a CPU that ran only the first few keeps
        # them: SIZE is per CPU, so "the newest" is per CPU.)
        run_marked(tag, range(100), cpu=min(os.sched_getaffinity(0)))
        trace.signal(signal.SIGUSR1)
        got = wait_for(trace, tag, 99)
    finally:
        trace.signal(signal.SIGINT)
    trace.finish()
    assert 0 < len(got) < 100 and got[0] > 0, got
    assert got == list(range(got[0], 100)), got  # the newest, contiguous, in order
