"""Which BPF features of the running kernel the trace sources may use, as ``-D`` constants.

``TRACE_HAVE_TASK_STORAGE``: ``BPF_MAP_TYPE_TASK_STORAGE`` with
``bpf_task_storage_get`` and ``bpf_get_current_task_btf`` callable from tracepoint
programs. Task storage came with Linux 5.11 for LSM programs; the kernel patch "bpf:
Enable task local storage for tracing programs" opened it to every tracing program type
(tracepoints and raw tracepoints too) soon after, so 5.13 is taken as a safe lower
bound; it needs the kernel's BTF (``/sys/kernel/btf/vmlinux``) for the task pointer.
``bpf_task_storage_get`` may return NULL (no memory, or the storage busy with another
BPF program on the CPU): the sources then treat the call as not remembered (counted
as a drop for an open, as a full hash map is). The sources
(bpf/trace_open.c, bpf/trace_syscalls.c) keep their per-thread state there when this
is 1 and in hash maps keyed by tid when it is 0.

``TRACE_TASK_COMM_OFF``: where ``task_struct.comm`` lies in the running kernel, from
its BTF (:func:`ringtool.kernel.btf.char_array_offset`), on kernels with
``bpf_get_current_task_btf`` (the task storage bound above covers it): the sources
that read a task's comm (bpf/trace_event.h, ``trace_task_comm``) load it straight
from the task instead of calling ``bpf_get_current_comm``. Absent (no BTF, or no
``char comm[16]`` member): they call the helper.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ringtool.kernel.btf import char_array_offset

#: The first kernel (major, minor) whose tracepoint programs may call bpf_task_storage_get.
TASK_STORAGE_SINCE = (5, 13)
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
#: The sources that read TRACE_HAVE_TASK_STORAGE.
SOURCES = ("trace_open.c", "trace_syscalls.c")
#: The sources given TRACE_TASK_COMM_OFF: tracing programs all (the helper it needs
#: is not callable from the networking program types).
COMM_SOURCES = ("trace_exec.c", "trace_open.c", "trace_syscalls.c")
#: The kernel's TASK_COMM_LEN (include/linux/sched.h), the length of TRACE_COMM_LEN.
TASK_COMM_LEN = 16


def kernel_version(release: str) -> tuple[int, int]:
    """(major, minor) of a ``uname -r`` string such as ``6.1.0-18-amd64``; (0, 0)
    when it does not start with two numbers."""
    m = re.match(r"(\d+)\.(\d+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def has_task_storage(release: str | None = None, btf: Path = VMLINUX_BTF) -> bool:
    """Whether tracepoint programs can use task storage on this kernel (``release``:
    ``os.uname().release`` unless given)."""
    rel = os.uname().release if release is None else release
    return kernel_version(rel) >= TASK_STORAGE_SINCE and btf.exists()


def comm_offset(btf: Path = VMLINUX_BTF) -> int | None:
    """The byte offset of ``task_struct.comm`` for direct loads through
    ``bpf_get_current_task_btf()``, or None when the kernel lacks that helper (the
    task storage bound) or its BTF does not show a ``char comm[16]``."""
    if not has_task_storage(btf=btf):
        return None
    return char_array_offset("task_struct", "comm", TASK_COMM_LEN, btf)


def feature_defines(source: str | None = None) -> dict[str, int | str]:
    """For the running kernel: ``TRACE_HAVE_TASK_STORAGE`` -> 1 or 0 (the sources in
    :data:`SOURCES`) and ``TRACE_TASK_COMM_OFF`` where known (:data:`COMM_SOURCES`);
    ``source`` None: both."""
    out: dict[str, int | str] = {}
    if source is None or source in SOURCES:
        out["TRACE_HAVE_TASK_STORAGE"] = int(has_task_storage())
    if source is None or source in COMM_SOURCES:
        offset = comm_offset()
        if offset is not None:
            out["TRACE_TASK_COMM_OFF"] = offset
    return out


__all__ = ["COMM_SOURCES", "SOURCES", "TASK_STORAGE_SINCE", "comm_offset", "feature_defines",
           "has_task_storage", "kernel_version"]  # fmt: skip
