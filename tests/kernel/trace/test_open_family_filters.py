"""The in-kernel filters and their exact accounting hold for the whole open family.

As tests/kernel/test_trace_filters.py and test_trace_task_filters.py assert for
openat(2): with a 4 KiB ring per CPU and a consumer that reads nothing while the
workers run, ``events + dropped + lost`` equals the matching events generated,
exactly, while non-matching workers make the same calls. Here each worker cycles
through open(2), openat(2), openat2(2) and creat(2) (raw syscalls: the C library's
open() is openat), every other call of a missing path with ``fail``.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from ringtool.event.layout import load_layout
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.trace import GoChild

pytestmark = pytest.mark.kernel

LAYOUT = load_layout()
CALLS = {v: k for k, v in LAYOUT.call_names.items()}

#: argv: name, uid (-1: keep), n, fail. x86_64 syscall numbers (the CI and test hosts).
_CHILD = r"""
import ctypes, os, sys
name, uid, n, fail = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(15, name.encode(), 0, 0, 0) == 0  # PR_SET_NAME
if uid >= 0:
    os.setgid(uid); os.setuid(uid)
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
how = How(os.O_RDONLY, 0, 0)
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
for i in range(n):
    path = b"/nonexistent-rtc/x" if fail and i % 2 else b"/dev/null"
    call = (i // 2) % 4
    if call == 0:
        fd = libc.syscall(2, path, os.O_RDONLY, 0)  # open
    elif call == 1:
        fd = libc.syscall(257, -100, path, os.O_RDONLY, 0)  # openat(AT_FDCWD)
    elif call == 2:
        fd = libc.syscall(437, -100, path, ctypes.byref(how), ctypes.sizeof(how))  # openat2
    else:
        fd = libc.syscall(85, path, 0o666)  # creat
    if fd >= 0:
        os.close(fd)
os._exit(0)
"""


class FamilyWorker(GoChild):
    """A process that makes ``n`` open-family calls on go (as ``uid`` when given)."""

    def __init__(self, n: int, *, uid: int = -1, fail: bool = False) -> None:
        self.name = "rtf" + secrets.token_hex(6)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, self.name, str(uid), str(n), "1" if fail else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"


def run_exact(opts: TraceOptions, match: FamilyWorker, other: FamilyWorker,
              expected: int) -> np.ndarray[Any, Any]:  # fmt: skip
    """Both workers under ``opts`` (open only, 4 KiB rings, nothing read while they
    run): the accounting is exact and every record is the matching worker's."""
    s = TraceSession(opts, LAYOUT)
    try:
        assert s.rb is not None and not s.notes, s.notes
        other.go()
        match.go()
        other.wait()
        match.wait()
        parts = []
        while len(batch := s.read_events()):
            parts.append(batch)
        records = np.concatenate(parts) if parts else np.empty(0, dtype=LAYOUT.event)
        dropped, lost = sum(s.dropped_per_cpu()), sum(s.lost_per_cpu().values())
    finally:
        s.close()
    assert {bytes(c).decode() for c in records["h"]["comm"]} <= {match.name}
    assert dropped > 0  # the tiny rings did overflow: tested under load
    assert len(records) + dropped + lost == expected
    return records


N, M = 1600, 6400
FAMILY = {CALLS[c] for c in ("open", "openat", "openat2", "creat")}


@pytest.fixture(autouse=True)
def _x86_64() -> None:
    assert os.uname().machine == "x86_64", "the workers use x86_64 syscall numbers"


def test_pid_filter_is_exact_for_every_call() -> None:
    match, other = FamilyWorker(N), FamilyWorker(M)
    opts = TraceOptions(events=("open",), buffer_pages=1, pid=match.pid)
    records = run_exact(opts, match, other, N)
    assert set(records["call"].tolist()) == FAMILY  # what got through: every call
    assert set(records["h"]["pid"].tolist()) == {match.pid}


def test_uid_filter_is_exact_for_every_call() -> None:
    match, other = FamilyWorker(N, uid=65534), FamilyWorker(M)
    opts = TraceOptions(events=("open",), buffer_pages=1, uid=65534)
    records = run_exact(opts, match, other, N)
    assert set(records["call"].tolist()) == FAMILY
    assert set(records["uid"].tolist()) == {65534}


def test_failed_only_is_exact_for_every_call() -> None:
    match, other = FamilyWorker(2 * N, fail=True), FamilyWorker(M, fail=True)
    opts = TraceOptions(events=("open",), buffer_pages=1, comm=match.name, failed_only=True)
    records = run_exact(opts, match, other, N)
    assert set(records["call"].tolist()) == FAMILY
    assert records["ret"].tolist() == [-2] * len(records)  # -ENOENT
