"""What a process's fds have attached: ``bpf(BPF_TASK_FD_QUERY)`` over ``/proc/PID/fd``.

For each fd of a process that is a BPF attachment (a tracepoint or raw tracepoint
perf event, a kprobe, a BPF link of those), the kernel gives the program's id and
the event's name -- what ``bpftool perf show`` lists (include/uapi/linux/bpf.h,
``task_fd_query``; kernel/bpf/syscall.c, bpf_task_fd_query). Other fds fail the query
and are left out. ``ringtool bench peers`` uses it to know when a tracer is attached.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

from ringtool.kernel.libc import raw_syscall

BPF_TASK_FD_QUERY = 20
#: bytes of the event name asked for (tracepoint names are short)
NAME_LEN = 256


class _Query(ctypes.Structure):
    """``union bpf_attr``'s task_fd_query member."""

    _fields_ = [("pid", ctypes.c_uint32), ("fd", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("buf_len", ctypes.c_uint32), ("buf", ctypes.c_uint64),
                ("prog_id", ctypes.c_uint32), ("fd_type", ctypes.c_uint32),
                ("probe_offset", ctypes.c_uint64), ("probe_addr", ctypes.c_uint64)]  # fmt: skip


def query(pid: int, fd: int) -> tuple[int, str] | None:
    """(program id, event name) of fd ``fd`` of process ``pid``, or None when it is no
    BPF attachment (or gone)."""
    name = ctypes.create_string_buffer(NAME_LEN)
    q = _Query(pid=pid, fd=fd, buf_len=NAME_LEN, buf=ctypes.addressof(name))
    res, _ = raw_syscall("bpf", ctypes.c_int(BPF_TASK_FD_QUERY), ctypes.byref(q),
                         ctypes.c_uint(ctypes.sizeof(q)))  # fmt: skip
    if res < 0:
        return None
    return int(q.prog_id), name.value.decode("utf-8", "replace")


def attached_events(pid: int) -> set[tuple[int, str]]:
    """(program id, event name) of every BPF attachment process ``pid`` holds now
    (empty when it has none or is gone). One program may be attached to several
    events (ringtool loads a body shared by several tracepoints once): each is a pair."""
    out: set[tuple[int, str]] = set()
    with contextlib.suppress(OSError):
        for entry in os.listdir(f"/proc/{pid}/fd"):
            found = query(pid, int(entry))
            if found is not None:
                out.add(found)
    return out


__all__ = ["attached_events", "query"]
