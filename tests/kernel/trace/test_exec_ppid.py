"""An exec by a process that was running before the trace started names its parent
(the parents of running processes are seeded from /proc: ringtool/trace/reading/parents.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.trace import GoChild, Trace

pytestmark = pytest.mark.kernel

_CHILD = r"""
import os, sys
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
try:
    os.execv("/nonexistent/rt-ppid", ["rt-ppid"])
except OSError:
    pass
os.execv("/bin/true", ["true"])
"""


class Execer(GoChild):
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"


def test_exec_of_a_process_forked_before_the_trace_has_its_ppid() -> None:
    child = Execer()  # forked before the trace: no fork record for it
    trace = Trace("--json", "--events", "exec", "-p", str(child.pid))
    child.go()
    child.wait()
    trace.signal(2)
    lines, _ = trace.finish()
    execs = [e for e in map(json.loads, lines) if e.get("type") == "exec"]
    failed = [e for e in execs if e["filename"] == "/nonexistent/rt-ppid"]
    ok = [e for e in execs if e["filename"] == "/bin/true"]
    assert failed and failed[0]["ret"] == -2 and failed[0]["ppid"] == os.getpid(), execs
    assert ok and ok[0]["ret"] == 0 and ok[0]["ppid"] == os.getpid(), execs
