"""``bench peers --share-cpu``'s busy loop (:func:`ringtool.bench.peers.busy_loop`) ends
with its block, and also when the bench is killed before its cleanup can run
(SIGKILL): the kernel kills it (``PR_SET_PDEATHSIG``), so no process is left spinning
on a CPU."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: A bench stand-in: the busy loop on its CPU, "ready", then it waits to be killed.
_BENCH = r"""
import os, sys, time
from ringtool.bench.peers import busy_loop
with busy_loop(min(os.sched_getaffinity(0))):
    print("ready", flush=True)
    if sys.argv[1] == "kill":
        time.sleep(600)
print("ended", flush=True)
"""


def _children(ppid: int) -> list[int]:
    """Pids whose parent is ``ppid`` (from /proc/PID/stat)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
                out.append(int(d.name))
    return out


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 30
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running(pid)


def test_the_busy_loop_ends_with_its_block() -> None:
    bench = subprocess.Popen([sys.executable, "-c", _BENCH, "end"], stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    out, _ = bench.communicate(timeout=60)
    assert out == "ready\nended\n"
    assert _children(bench.pid) == []


def test_the_busy_loop_dies_with_a_killed_bench() -> None:
    bench = subprocess.Popen([sys.executable, "-c", _BENCH, "kill"], stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        assert bench.stdout is not None and bench.stdout.readline() == "ready\n"
        spinners = _children(bench.pid)
        assert len(spinners) == 1 and _running(spinners[0])
    finally:
        os.kill(bench.pid, signal.SIGKILL)
        bench.wait()
    assert _gone_soon(spinners[0]), "the busy loop outlived the killed bench"
