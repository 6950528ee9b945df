"""The children of ``bench peers``: ``--share-cpu``'s busy loop
(:func:`ringtool.bench.peers.busy_loop`) ends with its block; it and a running tracer
(:class:`ringtool.bench.peers.Running`) also end when the bench is killed before its
cleanup can run (SIGKILL): the kernel kills them (``PR_SET_PDEATHSIG``), so no
process is left spinning on a CPU or tracing with nobody to stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ringtool.bench.peers import TRACER_CPU
from tests.helpers.procs import children_of, gone_within, running

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

#: A bench stand-in running a "tracer" (sleep) as the bench runs each one.
_TRACING = r"""
import sys, time
from pathlib import Path
from ringtool.bench.peer_tracers import Tracer
from ringtool.bench.peers import Running
Running(Tracer("sleeper", ("sleep", "600")), Path(sys.argv[1]) / "out")
print("ready", flush=True)
time.sleep(600)
"""


def test_the_busy_loop_ends_with_its_block() -> None:
    bench = subprocess.Popen([sys.executable, "-c", _BENCH, "end"], stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    out, _ = bench.communicate(timeout=60)
    assert out == "ready\nended\n"
    assert children_of(bench.pid) == []


def _child_of_killed_bench(*argv: str) -> int:
    """Runs a bench stand-in (``python -c ARGV...``) until it says ready, checks it has
    one child, SIGKILLs it, and gives the child's pid."""
    bench = subprocess.Popen([sys.executable, "-c", *argv], stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        assert bench.stdout is not None and bench.stdout.readline() == "ready\n"
        children = children_of(bench.pid)
        assert len(children) == 1 and running(children[0])
    finally:
        os.kill(bench.pid, signal.SIGKILL)
        bench.wait()
    return children[0]


def test_the_busy_loop_dies_with_a_killed_bench() -> None:
    spinner = _child_of_killed_bench(_BENCH, "kill")
    assert gone_within(spinner, 30), "the busy loop outlived the killed bench"


@pytest.mark.skipif(TRACER_CPU not in os.sched_getaffinity(0), reason="no CPU 1 here")
def test_a_running_tracer_dies_with_a_killed_bench(tmp_path: Path) -> None:
    tracer = _child_of_killed_bench(_TRACING, str(tmp_path))
    assert gone_within(tracer, 30), "the tracer outlived the killed bench"
