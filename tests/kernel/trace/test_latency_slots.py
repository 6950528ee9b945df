"""The syscalls source's per-thread start (bpf/trace_syscalls.c, ``struct sys_start``):
a start a thread leaves in its tid's slot, of a syscall whose exit the thread never
reaches (exit(2) ends it; an exec in a multithreaded process gives it the leader's
tid), is never taken by the next thread given that tid, whose first event is the
return from the clone that made it (``sys_exit`` without a ``sys_enter``). Such a
start would count a latency for exit(2) or execve(2) that no syscall had."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ringtool.trace.reading.options import TraceOptions
from tests.helpers.trace import traced, unique_comm

pytestmark = pytest.mark.kernel

SYS_EXIT, SYS_EXECVE, SYS_CLONE3 = 60, 59, 435  # arch/x86/entry/syscalls/syscall_64.tbl


@pytest.mark.parametrize("mode", ["exit", "exec"])
def test_a_start_left_behind_is_not_the_next_threads(mode: str) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("the syscall numbers are x86-64's")
    name = unique_comm()
    with traced(TraceOptions(events=("syscalls",), comm=name)) as s:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.tid_reuse", name, mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        out, _ = proc.communicate("go\n", timeout=120)
        hist = s.syscall_hist()
    tid, child = map(int, out.split())
    assert child == tid  # the child has the tid the thread left
    gone = SYS_EXIT if mode == "exit" else SYS_EXECVE
    assert sum(hist.get(gone, {}).values()) == 0, hist.get(gone)
    if mode == "exit":  # the traced process's own syscalls are counted
        assert sum(hist.get(SYS_CLONE3, {}).values()) >= 1
