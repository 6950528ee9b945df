"""perf_event_open(2) for BPF output events, their ioctls, and the ring mmap.

Layouts follow include/uapi/linux/perf_event.h. Failures raise
:class:`ringtool.errors.PerfEventOpenError` (or :class:`MmapError`) naming the cause:
the ``kernel.perf_event_paranoid`` sysctl and CAP_PERFMON for EACCES/EPERM, the fd
limit for EMFILE, an offline CPU for ENODEV, ``kernel.perf_event_mlock_kb`` for mmap.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
from pathlib import Path

from ringtool.errors import MmapError, PerfEventOpenError
from ringtool.kernel.libc import raw_syscall

PAGE_SIZE = mmap.PAGESIZE

# enum perf_type_id / perf_sw_ids / perf_event_sample_format (uapi/linux/perf_event.h)
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_BPF_OUTPUT = 10
PERF_SAMPLE_RAW = 1 << 10
PERF_FLAG_FD_CLOEXEC = 1 << 3

# struct perf_event_attr flag bits (the u64 bitfield after read_format)
ATTR_DISABLED = 1 << 0
ATTR_WATERMARK = 1 << 14
ATTR_WRITE_BACKWARD = 1 << 27

# ioctls: _IO('$', 0), _IO('$', 1), _IOW('$', 9, __u32)
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
PERF_EVENT_IOC_PAUSE_OUTPUT = 0x40042409


class PerfEventAttr(ctypes.Structure):
    """struct perf_event_attr up to PERF_ATTR_SIZE_VER7 (128 bytes); the kernel
    accepts any published size and zero-checks fields it does not know."""

    _fields_ = (
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),  # union with sample_freq
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),  # disabled:1, inherit:1, ... (bit numbers above)
        ("wakeup", ctypes.c_uint32),  # union wakeup_events / wakeup_watermark
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("_reserved_2", ctypes.c_uint16),
        ("aux_sample_size", ctypes.c_uint32),
        ("_reserved_3", ctypes.c_uint32),
        ("sig_data", ctypes.c_uint64),
    )


assert ctypes.sizeof(PerfEventAttr) == 128


def bpf_output_attr(
    *, wakeup_events: int = 1, watermark_bytes: int | None = None, backward: bool = False
) -> PerfEventAttr:
    """The attr libbpf uses for a perf buffer (software BPF_OUTPUT event, raw samples,
    period 1), opened disabled. ``watermark_bytes`` wakes the reader once that many
    bytes are pending instead of every ``wakeup_events`` samples; ``backward`` sets
    ``write_backward`` (flight recorder: pair it with a read-only mapping)."""
    attr = PerfEventAttr()
    attr.type = PERF_TYPE_SOFTWARE
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = PERF_COUNT_SW_BPF_OUTPUT
    attr.sample_period = 1
    attr.sample_type = PERF_SAMPLE_RAW
    attr.flags = ATTR_DISABLED
    if watermark_bytes is not None:
        attr.flags |= ATTR_WATERMARK
        attr.wakeup = watermark_bytes
    else:
        attr.wakeup = wakeup_events
    if backward:
        attr.flags |= ATTR_WRITE_BACKWARD
    return attr


def _paranoid() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"


def perf_event_open(attr: PerfEventAttr, *, pid: int = -1, cpu: int = -1) -> int:
    """perf_event_open(attr, pid, cpu, group_fd=-1, PERF_FLAG_FD_CLOEXEC); the new fd."""
    fd, err = raw_syscall(
        "perf_event_open",
        ctypes.byref(attr),
        ctypes.c_int(pid),
        ctypes.c_int(cpu),
        ctypes.c_int(-1),
        ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC),
    )
    if fd >= 0:
        return fd
    where = f"perf_event_open(BPF_OUTPUT, cpu={cpu}) failed: {os.strerror(err)}"
    if err in (errno.EACCES, errno.EPERM):
        why = (
            f"needs CAP_PERFMON (or CAP_SYS_ADMIN / root); kernel.perf_event_paranoid is "
            f"{_paranoid()} (system-wide events need <= 0 without CAP_PERFMON): run with "
            "sudo or `sysctl kernel.perf_event_paranoid=-1`"
        )
    elif err in (errno.EMFILE, errno.ENFILE):
        why = "out of file descriptors (one per CPU buffer): raise `ulimit -n`"
    elif err in (errno.ENODEV, errno.ENXIO):
        why = f"CPU {cpu} is offline or absent"
    elif err == errno.ENOENT:
        why = "this kernel has no PERF_COUNT_SW_BPF_OUTPUT software event (needs >= 4.4)"
    elif err == errno.E2BIG:
        why = "the kernel rejects this perf_event_attr size"
    elif err == errno.EINVAL:
        why = f"invalid attr or CPU {cpu} (beyond nr_cpu_ids?)"
    else:
        why = "see perf_event_open(2)"
    raise PerfEventOpenError(err, f"{where}: {why}")


def _ioctl(fd: int, request: int, arg: int, what: str) -> None:
    try:
        fcntl.ioctl(fd, request, arg)
    except OSError as exc:
        raise PerfEventOpenError(exc.errno or 0, f"ioctl({what}) on perf fd {fd}: {exc}") from exc


def enable(fd: int) -> None:
    """PERF_EVENT_IOC_ENABLE: start accepting output."""
    _ioctl(fd, PERF_EVENT_IOC_ENABLE, 0, "PERF_EVENT_IOC_ENABLE")


def disable(fd: int) -> None:
    """PERF_EVENT_IOC_DISABLE: stop accepting output (bpf_perf_event_output fails)."""
    _ioctl(fd, PERF_EVENT_IOC_DISABLE, 0, "PERF_EVENT_IOC_DISABLE")


def pause_output(fd: int, paused: bool) -> None:
    """PERF_EVENT_IOC_PAUSE_OUTPUT: while paused the kernel writes nothing to the ring
    (outputs are dropped and counted as lost), so it can be read without racing."""
    _ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1 if paused else 0, "PERF_EVENT_IOC_PAUSE_OUTPUT")


def map_ring(fd: int, page_cnt: int, *, writable: bool = True) -> mmap.mmap:
    """mmap the user page + ``page_cnt`` data pages of perf fd ``fd`` (MAP_SHARED).

    Read-write: the kernel honours ``data_tail`` (records are lost, never overwritten);
    read-only: overwrite mode (what ``write_backward`` flight recorders use).
    """
    length = (1 + page_cnt) * PAGE_SIZE
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    try:
        return mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=prot)
    except OSError as exc:
        hint = ""
        if exc.errno in (errno.EPERM, errno.ENOMEM):
            hint = (
                "; locked perf memory exceeds kernel.perf_event_mlock_kb and RLIMIT_MEMLOCK "
                "(run as root / raise them, or use a smaller page_cnt)"
            )
        raise MmapError(
            exc.errno or 0,
            f"mmap of perf ring ({page_cnt} data pages) refused: {exc.strerror}{hint}",
        ) from exc
