"""Portable BPF: the tracepoint layout chosen at load time fits the kernel.

* On the running kernel, the loader's choice compiles, loads and reads the right
  bytes: a fork event carries the child's comm.
* Both code paths of bpf/trace_exec.c compile and pass the verifier against the
  format they are written for. BCC builds a TRACEPOINT_PROBE's ``args`` struct from
  the kernel's tracefs format file, so a path can only compile against a format that
  has its member (``child_comm`` or ``data_loc_child_comm``). Each case therefore
  runs in a private mount namespace where the sched_process_fork format file is the
  6.1 or the 6.18 fixture (bound over both tracefs mounts: ringtool reads
  /sys/kernel/tracing, BCC 0.26 /sys/kernel/debug/tracing), and the whole chain runs
  there: ringtool reads the format, picks the -D, BCC compiles, the kernel verifies.
  It stops before attaching (BCC's auto-attach is turned off in that child): the
  program is built for the fixture's offsets, not this kernel's, and the kernel
  refuses such an attach anyway (a ctx offset beyond the tracepoint's record).
  Forcing the other -D fails the compile with clang's "no member named" error.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ringtool.event.layout import load_layout
from ringtool.programs.tracepoints import TRACEFS_DIRS
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.paths import ROOT
from tests.helpers.trace import Worker, drain, unique_comm

pytestmark = pytest.mark.kernel

FORK_FORMAT = "events/sched/sched_process_fork/format"
FIXTURES = ROOT / "tests" / "fixtures" / "tracefs"

#: Runs in the namespace: pick, compile and verify trace_exec.c; argv[1] = forced -D
#: value or "" for the kernel's (the fixture's) choice.
_COMPILE = r"""
import sys
import bcc
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.programs.loader import compile_program
from ringtool.programs.tracepoints import layout_choices
from ringtool.event.layout import load_layout
from ringtool.trace.reading.cflags import defines_of
from ringtool.trace.reading.sources import SOURCE_NAMED

bcc.BPF._trace_autoload = lambda self: None  # compile + verify only (see the test doc)
EXEC = SOURCE_NAMED["exec"]
print(layout_choices(EXEC.needs.string_fields, EXEC.bpf_file)[0].describe(), flush=True)
forced = {"TRACE_FORK_CHILD_COMM_DATA_LOC": sys.argv[1]} if sys.argv[1] else {}
with RingBufGroup(cpus_per_buffer=1, ring_bytes=4096) as group:
    defines = {**defines_of(group.cflags()), **load_layout().size_defines(), **forced}
    obj = compile_program(EXEC.bpf_file, defines=defines, needs=EXEC.needs)
    obj.load_func(b"tracepoint__sched__sched_process_fork", bcc.BPF.TRACEPOINT)
    obj.cleanup()
print("verified", flush=True)
"""


def run_with_fork_format(fixture: Path, forced: str = "") -> subprocess.CompletedProcess[str]:
    """``_COMPILE`` in a private mount namespace whose fork format is ``fixture``."""
    targets = [root / FORK_FORMAT for root in TRACEFS_DIRS if (root / FORK_FORMAT).exists()]
    assert targets, "no tracefs with sched_process_fork"
    binds = " && ".join(f"mount --bind '{fixture}' '{t}'" for t in targets)
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f'{binds} && exec "$0" -c "$1" "$2"', sys.executable, _COMPILE, forced],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("version", "value", "kind"),
    [("6.1", 0, "char[16] at 28"), ("6.18", 1, "__data_loc char[] at 16")],
)
def test_each_path_compiles_and_verifies_against_its_format(
    version: str, value: int, kind: str
) -> None:
    res = run_with_fork_format(FIXTURES / version / FORK_FORMAT)
    assert res.returncode == 0, res.stderr[-3000:]
    choice = f"child_comm is {kind} -> -DTRACE_FORK_CHILD_COMM_DATA_LOC={value}"
    assert res.stdout.splitlines() == [f"sched:sched_process_fork {choice}", "verified"]


@pytest.mark.parametrize(
    ("version", "forced", "missing"),
    [("6.1", "1", "data_loc_child_comm"), ("6.18", "0", "child_comm")],
)
def test_the_other_path_does_not_compile_against_a_format(
    version: str, forced: str, missing: str
) -> None:
    res = run_with_fork_format(FIXTURES / version / FORK_FORMAT, forced)
    assert res.returncode != 0 and "verified" not in res.stdout
    assert f"no member named '{missing}'" in res.stderr


def test_the_running_kernels_choice_reads_the_child_comm() -> None:
    parent = Worker(unique_comm(), "fork", Path("/"), 3)
    s = TraceSession(TraceOptions(events=("exec",), comm=parent.name), load_layout())
    try:
        assert s.sources.keys() == {"exec"} and not s.notes, s.notes
        parent.go()
        parent.wait()
        records = drain(s)
    finally:
        s.close()
    forks = records[records["h"]["type"] == s.layout.type_id("fork")]
    assert len(forks) == 3
    assert {bytes(d).decode() for d in forks["data"]} == {parent.name}  # inherited comm
    assert set(forks["h"]["pid"].tolist()) == {parent.pid}
    assert len(set(forks["aux"].tolist())) == 3  # three distinct child pids
