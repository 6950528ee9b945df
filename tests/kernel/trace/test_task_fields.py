"""The task fields every event carries as the trace sources read them (bpf/trace_event.h):
comm, real uid and gid, and cgroup id, straight from ``task_struct`` where the kernel's
BTF gives their offsets (ringtool/programs/kernel_features.py), else with the helpers.

The worker renames itself from a 15-byte name to a short one (where the two ways of
reading a comm can differ: 6.1 sets a comm with strlcpy, which leaves the longer
name's tail after the NUL), drops to uid/gid 65534 and is moved to a cgroup of its own
before it opens: the -c filter must match the short name, and every event must carry
the short name with zeros after it, 65534 twice, that cgroup's id, and the process's
pid with the id of the thread that opened (a thread of its own, so the two differ),
on every kernel.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from ringtool.event.syscalls import syscall_namer
from ringtool.programs.kernel_features import (
    comm_offset,
    feature_defines,
    has_task_storage,
    task_field_defines,
)
from ringtool.trace.reading.session import TraceOptions
from ringtool.trace.reading.sources import SOURCE_NAMED
from tests.helpers.cgroups import fresh_cgroup
from tests.helpers.trace import counts, traced

pytestmark = pytest.mark.kernel

NOBODY = 65534

#: argv: the long name, the short name, opens. Renames itself twice (PR_SET_NAME),
#: becomes uid/gid 65534, starts a thread (which inherits both) and reports
#: "ready TID", waits for go on stdin; the thread opens /dev/null n times.
_CHILD = r"""
import ctypes, os, sys, threading
long, short, n = sys.argv[1].encode(), sys.argv[2].encode(), int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(15, long, 0, 0, 0) == 0 and libc.prctl(15, short, 0, 0, 0) == 0
os.setgid(65534); os.setuid(65534)
go = threading.Event()
def work():
    go.wait()
    for _ in range(n):
        os.close(os.open("/dev/null", os.O_RDONLY))
t = threading.Thread(target=work)
t.start()
sys.stdout.write(f"ready {t.native_id}\n"); sys.stdout.flush()
sys.stdin.readline()
go.set()
t.join()
os._exit(0)
"""


@pytest.fixture
def cgroup() -> Iterator[Path]:
    with fresh_cgroup() as path:
        yield path


class Worker(NamedTuple):
    proc: subprocess.Popen[str]
    short: str  # its comm
    tid: int  # the thread that opens (not the process's main thread)


def _worker(n: int, cgroup: Path) -> Worker:
    long, short = "rtl" + secrets.token_hex(6), "rts" + secrets.token_hex(2)
    assert len(long) == 15 and len(short) == 7
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, long, short, str(n)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    ready, tid = proc.stdout.readline().split()
    assert ready == "ready" and int(tid) != proc.pid
    (cgroup / "cgroup.procs").write_text(str(proc.pid))
    return Worker(proc, short, int(tid))


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0


def _comms(events: np.ndarray) -> set[bytes]:  # type: ignore[type-arg]
    """Each event's 16 comm bytes as stored (trailing NULs kept)."""
    raw = np.ascontiguousarray(events["h"]["comm"]).view(np.uint8).reshape(len(events), -1)
    return {row.tobytes() for row in raw}


def _check_fields(events: np.ndarray, w: Worker, cgroup: Path) -> None:  # type: ignore[type-arg]
    assert _comms(events) == {w.short.encode().ljust(16, b"\0")}
    assert set(events["h"]["pid"].tolist()) == {w.proc.pid}  # the tgid
    assert set(events["h"]["tid"].tolist()) == {w.tid}
    assert set(events["uid"].tolist()) == set(events["gid"].tolist()) == {NOBODY}
    assert set(events["h"]["cgroup"].tolist()) == {os.stat(cgroup).st_ino}


def test_the_comm_filter_matches_a_name_shorter_than_the_last(cgroup: Path) -> None:
    w = _worker(500, cgroup)
    opts = TraceOptions(events=("open", "syscalls"), comm=w.short, buffer_pages=256)
    with traced(opts) as s:
        _go(w.proc)
        events, dropped, lost = counts(s)
        name = syscall_namer()
        calls = {name(nr): sum(b.values()) for nr, b in s.syscall_hist().items()}
    opens = events[events["h"]["type"] == 4]  # TRACE_OPEN
    assert (len(opens), dropped, lost) == (500, 0, 0)
    _check_fields(opens, w, cgroup)
    assert calls.get("openat") == calls.get("close") == 500, calls  # the syscalls filter


def test_every_event_has_the_tasks_fields_without_a_comm_filter(cgroup: Path) -> None:
    w = _worker(200, cgroup)
    with traced(TraceOptions(events=("open",), pid=w.proc.pid, buffer_pages=256)) as s:
        _go(w.proc)
        events, dropped, lost = counts(s)
    assert (len(events), dropped, lost) == (200, 0, 0)
    _check_fields(events, w, cgroup)


def test_the_offsets_are_found_where_the_kernel_has_btf() -> None:
    """Every kernel CI runs (6.1, 6.12, Debian's newest) has BTF and the helper: the
    direct reads are what they run, not the fallback."""
    if not has_task_storage():
        pytest.skip("no bpf_get_current_task_btf or no BTF here: the helpers are used")
    fields = task_field_defines()
    assert fields["TRACE_TASK_COMM_OFF"] == comm_offset()
    for name in ("TRACE_TASK_CRED_OFF", "TRACE_CRED_UID_OFF", "TRACE_CRED_GID_OFF",
                 "TRACE_TASK_CGROUPS_OFF", "TRACE_KERNFS_NODE_ID_OFF", "TRACE_TASK_PID_OFF",
                 "TRACE_TASK_TGID_OFF", "TRACE_TASK_START_TIME_OFF"):  # fmt: skip
        assert name in fields, fields
    exec_fields = {k: v for k, v in fields.items() if k != "TRACE_TASK_START_TIME_OFF"}
    assert feature_defines(SOURCE_NAMED["exec"].needs) == exec_fields  # syscalls' alone
    assert feature_defines(SOURCE_NAMED["net"].needs) == {}
