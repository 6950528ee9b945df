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
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: The first kernel (major, minor) whose tracepoint programs may call bpf_task_storage_get.
TASK_STORAGE_SINCE = (5, 13)
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
#: The sources that read the constants.
SOURCES = ("trace_open.c", "trace_syscalls.c")


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


def feature_defines(source: str | None = None) -> dict[str, int | str]:
    """``TRACE_HAVE_TASK_STORAGE`` -> 1 or 0 for the running kernel (empty for a
    ``source`` that does not use it)."""
    if source is not None and source not in SOURCES:
        return {}
    return {"TRACE_HAVE_TASK_STORAGE": int(has_task_storage())}


__all__ = ["SOURCES", "TASK_STORAGE_SINCE", "feature_defines", "has_task_storage",
           "kernel_version"]  # fmt: skip
