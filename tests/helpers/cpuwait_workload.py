"""A workload of known CPU waits for the cpuwait source's kernel tests: one process
whose threads compete for one CPU.

The child (:class:`CpuWaitWorkload`) names itself, pins itself to one CPU
(``os.sched_setaffinity``: its threads inherit it) and on go starts ``threads``
threads, each doing the same known work: one ``hashlib.pbkdf2_hmac`` call of
``iterations`` rounds, which runs without the GIL, so the threads are all runnable at
once and take turns on the CPU (the scheduler preempts them: their waits are
run-queue waits, never sleeps). Each thread reports, at its end, its own tid, wall
time and CPU time over the work, and the kernel's own count of its run-queue wait
since it was created (``/proc/thread-self/schedstat``'s second field, run_delay, in
ns: the scheduler's accounting, kernel/sched/stats.h, not a tracepoint; and its third,
the times it ran) and its whole CPU time (``cpu_total_ns``) at the end of its work;
``life_ns`` is the same for all: from before the first thread was started to after
the last one ended (every thread's life lies inside it). It prints them as one JSON
line and exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.helpers.trace import GoChild

_CHILD = r"""
import ctypes, hashlib, json, os, sys, threading, time
name = sys.argv[1].encode()
cpu, threads, iterations = (int(x) for x in sys.argv[2:5])
assert ctypes.CDLL(None, use_errno=True).prctl(15, name, 0, 0, 0) == 0  # PR_SET_NAME
os.sched_setaffinity(0, {cpu})
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
out = []
def schedstat():
    with open("/proc/thread-self/schedstat") as f:
        return [int(x) for x in f.read().split()]
def work():
    t0, c0 = time.monotonic_ns(), time.thread_time_ns()
    hashlib.pbkdf2_hmac("sha256", b"ringtool", b"cpuwait", iterations)
    t1, c1 = time.monotonic_ns(), time.thread_time_ns()
    _, run_delay, slices = schedstat()
    out.append({"tid": threading.get_native_id(), "wall_ns": t1 - t0, "cpu_ns": c1 - c0,
                "cpu_total_ns": c1, "run_delay_ns": run_delay, "slices": slices})
ts = [threading.Thread(target=work) for _ in range(threads)]
start = time.monotonic_ns()
for t in ts:
    t.start()
for t in ts:
    t.join()
life = time.monotonic_ns() - start
for o in out:
    o["life_ns"] = life
sys.stdout.write(json.dumps(out) + "\n"); sys.stdout.flush()
os._exit(0)
"""


class CpuWaitWorkload(GoChild):
    """The child process (see the module doc), started and ready: ``name`` its comm,
    ``cpu`` the CPU it is pinned to."""

    def __init__(self, name: str, cpu: int, threads: int = 3, iterations: int = 300_000) -> None:
        self.name = name
        self.cpu = cpu
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, name, str(cpu), str(threads), str(iterations)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"

    def run(self) -> list[dict[str, Any]]:
        """Go, and the threads' reports (each ``tid``, ``wall_ns``, ``cpu_ns``,
        ``run_delay_ns``, ``slices``, ``cpu_total_ns``, ``life_ns``) once the process has
        exited."""
        self.go()
        assert self.proc.stdout is not None
        threads: list[dict[str, Any]] = json.loads(self.proc.stdout.readline())
        self.wait()
        return threads


def one_cpu() -> int:
    """The CPU the workload is pinned to: the last one this process may run on."""
    return max(os.sched_getaffinity(0))
