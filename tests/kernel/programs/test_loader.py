"""loader.detach_all: BCC objects' tracepoints are closed concurrently, then each
object is cleaned up; afterwards no program runs on those tracepoints any more."""

from __future__ import annotations

import os

import pytest

from ringtool.kernel import bpf
from ringtool.programs.loader import detach_all, import_bcc

pytestmark = pytest.mark.kernel

SOURCE = b"""
BPF_ARRAY(hits, u64, 1);
static __always_inline int hit(void) {
    int zero = 0;
    u64 *v = hits.lookup(&zero);
    if (v)
        __sync_fetch_and_add(v, 1);
    return 0;
}
TRACEPOINT_PROBE(syscalls, sys_enter_getppid) { return hit(); }
TRACEPOINT_PROBE(syscalls, sys_exit_getppid) { return hit(); }
TRACEPOINT_PROBE(syscalls, sys_enter_getpgid) { return hit(); }
TRACEPOINT_PROBE(syscalls, sys_exit_getpgid) { return hit(); }
"""


def hits(fd: int) -> int:
    raw = bpf.map_lookup(fd, b"\0\0\0\0", 8)
    assert raw is not None
    return int.from_bytes(raw, "little")


def test_no_program_runs_after_detach_all() -> None:
    bcc = import_bcc()
    objs = [bcc.BPF(text=SOURCE), bcc.BPF(text=SOURCE)]
    maps = [os.dup(obj[b"hits"].map_fd) for obj in objs]  # outlive the objects
    try:
        assert all(len(obj.tracepoint_fds) == 4 for obj in objs)
        os.getppid()
        os.getpgid(0)
        before = [hits(fd) for fd in maps]
        assert all(n >= 4 for n in before)  # each call: enter + exit, per object
        detach_all(objs)
        assert all(obj.tracepoint_fds == {} for obj in objs)
        for _ in range(10):
            os.getppid()
            os.getpgid(0)
        assert [hits(fd) for fd in maps] == before
        detach_all(objs)  # again: nothing left to do
    finally:
        for fd in maps:
            os.close(fd)
