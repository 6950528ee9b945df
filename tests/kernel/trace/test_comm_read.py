"""The task's comm as the trace sources read it (bpf/trace_event.h, trace_task_comm):
straight from ``task_struct`` where the kernel's BTF gives its offset, else with
``bpf_get_current_comm``. A process that renames itself from a 15-byte name to a short
one is where the two can differ: 6.1 sets a comm with strlcpy, which leaves the longer
name's tail after the NUL. The -c filter must match the short name, and every event's
comm must be the short name with zeros after it, on every kernel."""

from __future__ import annotations

import secrets
import subprocess
import sys

import numpy as np
import pytest

from ringtool.event.syscalls import syscall_namer
from ringtool.programs.kernel_features import comm_offset, feature_defines, has_task_storage
from ringtool.trace.session import TraceOptions
from tests.helpers.trace import counts, traced

pytestmark = pytest.mark.kernel

#: argv: the long name, the short name, opens. Renames itself twice (PR_SET_NAME),
#: reports ready, waits for go on stdin, opens /dev/null n times, execs /bin/true
#: (the exec event's comm is "true"), which fails nothing.
_CHILD = r"""
import ctypes, os, sys
long, short, n = sys.argv[1].encode(), sys.argv[2].encode(), int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(15, long, 0, 0, 0) == 0 and libc.prctl(15, short, 0, 0, 0) == 0
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
for _ in range(n):
    os.close(os.open("/dev/null", os.O_RDONLY))
os._exit(0)
"""


def _renamed(n: int) -> tuple[subprocess.Popen[str], str]:
    long, short = "rtl" + secrets.token_hex(6), "rts" + secrets.token_hex(2)
    assert len(long) == 15 and len(short) == 7
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, long, short, str(n)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc, short


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0


def _comms(events: np.ndarray) -> set[bytes]:  # type: ignore[type-arg]
    """Each event's 16 comm bytes as stored (trailing NULs kept)."""
    raw = np.ascontiguousarray(events["h"]["comm"]).view(np.uint8).reshape(len(events), -1)
    return {row.tobytes() for row in raw}


def test_the_comm_filter_matches_a_name_shorter_than_the_last() -> None:
    proc, short = _renamed(500)
    opts = TraceOptions(events=("open", "syscalls"), comm=short, buffer_pages=256)
    with traced(opts) as s:
        _go(proc)
        events, dropped, lost = counts(s)
        name = syscall_namer()
        calls = {name(nr): sum(b.values()) for nr, b in s.syscall_hist().items()}
    opens = events[events["h"]["type"] == 4]  # TRACE_OPEN
    assert (len(opens), dropped, lost) == (500, 0, 0)
    assert _comms(opens) == {short.encode().ljust(16, b"\0")}
    assert calls.get("openat") == calls.get("close") == 500, calls  # the syscalls filter


def test_every_event_has_the_name_zero_padded() -> None:
    proc, short = _renamed(200)
    with traced(TraceOptions(events=("open",), pid=proc.pid, buffer_pages=256)) as s:
        _go(proc)
        events, dropped, lost = counts(s)
    assert (len(events), dropped, lost) == (200, 0, 0)
    assert _comms(events) == {short.encode().ljust(16, b"\0")}


def test_the_offset_is_found_where_the_kernel_has_btf() -> None:
    """Every kernel CI runs (6.1, 6.12, Debian's newest) has BTF and the helper: the
    direct read is what they run, not the fallback."""
    if not has_task_storage():
        pytest.skip("no bpf_get_current_task_btf or no BTF here: the helper is used")
    offset = comm_offset()
    assert offset is not None
    assert feature_defines("trace_exec.c") == {"TRACE_TASK_COMM_OFF": offset}
    assert feature_defines("trace_net.c") == {}
