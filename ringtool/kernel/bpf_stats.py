"""The kernel's BPF run-time statistics: turn them on for a while, read them per program.

With the statistics on, the kernel times every run of every BPF program (two clock
reads around it) and adds to the program's ``run_time_ns`` and ``run_cnt``
(``struct bpf_prog_stats``); :func:`prog_run_stats` reads them with
``BPF_OBJ_GET_INFO_BY_FD`` (``struct bpf_prog_info``, include/uapi/linux/bpf.h).

They are turned on with the ``BPF_ENABLE_STATS`` command (type ``BPF_STATS_RUN_TIME``,
Linux 5.8, needs CAP_SYS_ADMIN): kernel/bpf/syscall.c's ``bpf_enable_runtime_stats``
increments the ``bpf_stats_enabled_key`` static key and returns an anonymous-inode fd
whose release (``bpf_stats_release``) decrements it. So the statistics stay on exactly
while one such fd is open anywhere (or the sysctl asks for them), and a process that
dies — even by SIGKILL — turns its share off as the kernel closes its fds. The sysctl
``kernel.bpf_stats_enabled`` is never written here; note that it shows only what was
written to it (``bpf_stats_handler`` keeps its own ``saved_val``), not the fds' share:
whether the statistics are collected is seen in ``run_time_ns`` growing.

Use :func:`enable` (a context manager) around the reads::

    with bpf_stats.enable():
        before = bpf_stats.prog_run_stats(fd)
        ...
        after = bpf_stats.prog_run_stats(fd)
        ns_per_run = (after.run_time_ns - before.run_time_ns) / (after.run_cnt - before.run_cnt)
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ringtool.errors import ArgumentError, BpfSyscallError, KernelFeatureError, PrivilegeError
from ringtool.kernel.bpf import Cmd, bpf_call, close_fd, make_attr

#: enum bpf_stats_type: BPF_STATS_RUN_TIME
BPF_STATS_RUN_TIME = 0
#: the sysctl that also turns the statistics on (read only, here)
SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


def enable_stats() -> int:
    """``BPF_ENABLE_STATS`` (``BPF_STATS_RUN_TIME``): turns the run-time statistics on
    and returns the fd that keeps them on; closing it (or this process ending) turns
    this share off again. The caller owns the fd; prefer :func:`enable`.

    Raises :class:`~ringtool.errors.PrivilegeError` without CAP_SYS_ADMIN (EPERM: the
    kernel asks for it, CAP_BPF is not enough), :class:`~ringtool.errors.KernelFeatureError`
    on a kernel older than 5.8 (EINVAL: it does not know the command),
    :class:`~ringtool.errors.BpfSyscallError` otherwise (EBUSY: 2^30 holders)."""
    attr = make_attr([(0, ctypes.c_uint32(BPF_STATS_RUN_TIME))])  # enable_stats.type
    try:
        fd = bpf_call(Cmd.ENABLE_STATS, attr, what="BPF_STATS_RUN_TIME")
    except BpfSyscallError as exc:
        if exc.errno == errno.EINVAL:
            raise KernelFeatureError(
                "the kernel has no BPF_ENABLE_STATS (Linux 5.8+): BPF run-time statistics "
                "are unavailable"
            ) from exc
        raise
    except PrivilegeError as exc:  # the generic EPERM message names CAP_BPF: not enough here
        raise PrivilegeError(
            "BPF_ENABLE_STATS refused (EPERM): BPF run-time statistics need CAP_SYS_ADMIN "
            "(run as root)"
        ) from exc
    os.set_inheritable(fd, False)  # kernels before 5.10 made it without O_CLOEXEC
    return fd


@contextmanager
def enable() -> Iterator[int]:
    """The run-time statistics on inside the ``with`` block (its value: the fd), off
    again after it (this share: another holder's, or the sysctl's, stays). Errors as
    :func:`enable_stats`, raised on entry."""
    fd = enable_stats()
    try:
        yield fd
    finally:
        close_fd(fd)  # bpf_stats_release: static_key_slow_dec(&bpf_stats_enabled_key)


def sysctl_enabled() -> int | None:
    """``kernel.bpf_stats_enabled`` (0 or 1), or None when the file is missing. What was
    written to the sysctl only: an open :func:`enable_stats` fd does not show here."""
    try:
        return int(SYSCTL.read_text().strip())
    except (OSError, ValueError):
        return None


class _ProgInfo(ctypes.Structure):
    """``struct bpf_prog_info`` up to ``attach_btf_id`` (include/uapi/linux/bpf.h); the
    pointer fields stay 0, so the kernel fills in counts only. The kernel copies
    ``min(info_len, its own size)`` and says how much in ``info_len``: an older kernel
    writes less; a bigger ``info_len`` than its own must have a zero tail
    (``bpf_check_uarg_tail_zero``), which ours is."""

    _fields_ = (
        ("type", ctypes.c_uint32),  # 0
        ("id", ctypes.c_uint32),  # 4
        ("tag", ctypes.c_uint8 * 8),  # 8
        ("jited_prog_len", ctypes.c_uint32),  # 16
        ("xlated_prog_len", ctypes.c_uint32),  # 20
        ("jited_prog_insns", ctypes.c_uint64),  # 24
        ("xlated_prog_insns", ctypes.c_uint64),  # 32
        ("load_time", ctypes.c_uint64),  # 40
        ("created_by_uid", ctypes.c_uint32),  # 48
        ("nr_map_ids", ctypes.c_uint32),  # 52
        ("map_ids", ctypes.c_uint64),  # 56
        ("name", ctypes.c_char * 16),  # 64
        ("ifindex", ctypes.c_uint32),  # 80
        ("gpl_compatible", ctypes.c_uint32),  # 84 (a 1-bit field and padding)
        ("netns_dev", ctypes.c_uint64),  # 88
        ("netns_ino", ctypes.c_uint64),  # 96
        ("nr_jited_ksyms", ctypes.c_uint32),  # 104
        ("nr_jited_func_lens", ctypes.c_uint32),  # 108
        ("jited_ksyms", ctypes.c_uint64),  # 112
        ("jited_func_lens", ctypes.c_uint64),  # 120
        ("btf_id", ctypes.c_uint32),  # 128
        ("func_info_rec_size", ctypes.c_uint32),  # 132
        ("func_info", ctypes.c_uint64),  # 136
        ("nr_func_info", ctypes.c_uint32),  # 144
        ("nr_line_info", ctypes.c_uint32),  # 148
        ("line_info", ctypes.c_uint64),  # 152
        ("jited_line_info", ctypes.c_uint64),  # 160
        ("nr_jited_line_info", ctypes.c_uint32),  # 168
        ("line_info_rec_size", ctypes.c_uint32),  # 172
        ("jited_line_info_rec_size", ctypes.c_uint32),  # 176
        ("nr_prog_tags", ctypes.c_uint32),  # 180
        ("prog_tags", ctypes.c_uint64),  # 184
        ("run_time_ns", ctypes.c_uint64),  # 192
        ("run_cnt", ctypes.c_uint64),  # 200
        ("recursion_misses", ctypes.c_uint64),  # 208
        ("verified_insns", ctypes.c_uint32),  # 216
        ("attach_btf_obj_id", ctypes.c_uint32),  # 220
        ("attach_btf_id", ctypes.c_uint32),  # 224
    )


#: ``run_time_ns`` and ``run_cnt`` exist when the kernel wrote this many bytes (5.1+)
_RUN_STATS_END = _ProgInfo.run_cnt.offset + 8


@dataclass(frozen=True, slots=True)
class ProgRunStats:
    """One reading of a program's counters (cumulative since it was loaded; they grow
    only while the statistics are on). ``recursion_misses``: runs skipped because the
    program was already running on that CPU (0 on kernels without the field)."""

    id: int
    name: str
    run_time_ns: int
    run_cnt: int
    recursion_misses: int


def prog_run_stats(fd: int) -> ProgRunStats:
    """``BPF_OBJ_GET_INFO_BY_FD`` on the program ``fd``: its id, kernel name and run
    counters. Cheap (one syscall, no allocation in the kernel); safe to call at any
    time from any thread. Raises :class:`~ringtool.errors.ArgumentError` when ``fd`` is
    another kind of file (a map's info has no run counters),
    :class:`~ringtool.errors.BpfSyscallError` when it is not open,
    :class:`~ringtool.errors.KernelFeatureError` when the kernel does not report run
    counters (before 5.1)."""
    try:
        kind = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        kind = ""  # not open (the bpf(2) call says so) or no /proc: let the kernel answer
    if kind and kind != "anon_inode:bpf-prog":
        raise ArgumentError(f"fd {fd} is not a BPF program (it is {kind})")
    info = _ProgInfo()
    attr = make_attr(
        [
            (0, ctypes.c_uint32(fd)),  # info.bpf_fd
            (4, ctypes.c_uint32(ctypes.sizeof(info))),  # info.info_len (in/out)
            (8, ctypes.c_uint64(ctypes.addressof(info))),  # info.info
        ]
    )
    bpf_call(Cmd.OBJ_GET_INFO_BY_FD, attr, what=f"fd {fd} (is it a BPF program?)")
    written = ctypes.c_uint32.from_buffer(attr, 4).value
    if written < _RUN_STATS_END:
        raise KernelFeatureError("the kernel reports no BPF run counters (Linux 5.1+)")
    return ProgRunStats(
        id=info.id,
        name=info.name.decode(errors="replace"),
        run_time_ns=info.run_time_ns,
        run_cnt=info.run_cnt,
        recursion_misses=info.recursion_misses,
    )


__all__ = ["ProgRunStats", "enable", "enable_stats", "prog_run_stats", "sysctl_enabled"]
