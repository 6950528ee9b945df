"""futex(2) wait/wake on shared (not process-private) 32-bit words, and futex_waitv(2).

KMES buffers are shared between processes through a memfd, so the futex ops are the
shared variants (no FUTEX_PRIVATE_FLAG): the kernel keys them on the file page, not
the address space. ctypes releases the GIL around the call, so other threads run while
one sleeps.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import time

from ringtool.errors import KmesError
from ringtool.kernel.libc import libc, raw_syscall

FUTEX_WAIT = 0
FUTEX_WAKE = 1
FUTEX2_SIZE_U32 = 0x02
CLOCK_MONOTONIC = 1
INT_MAX = 2**31 - 1
# futex_waitv(2) is 449 in asm-generic and x86-64 alike (Linux 5.16+).
_FUTEX_WAITV_NR = {"x86_64": 449, "aarch64": 449}


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _FutexWaitv(ctypes.Structure):
    _fields_ = [
        ("val", ctypes.c_uint64),
        ("uaddr", ctypes.c_uint64),
        ("flags", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]


def _timespec(seconds: float) -> _Timespec:
    sec = int(seconds)
    return _Timespec(sec, int((seconds - sec) * 1e9))


def futex_wait(addr: int, expected: int, timeout: float | None) -> bool:
    """Sleep while the u32 at ``addr`` equals ``expected``, at most ``timeout`` seconds.

    Returns True if woken (or the value had already changed), False on timeout. EINTR
    counts as a wake (the caller re-checks its condition anyway).
    """
    ts = _timespec(max(timeout, 0.0)) if timeout is not None else None
    res, err = raw_syscall(
        "futex",
        ctypes.c_void_p(addr),
        ctypes.c_int(FUTEX_WAIT),
        ctypes.c_uint32(expected),
        ctypes.byref(ts) if ts is not None else ctypes.c_void_p(0),
        ctypes.c_void_p(0),
        ctypes.c_uint32(0),
    )
    if res == 0 or err in (errno.EAGAIN, errno.EINTR):
        return True
    if err == errno.ETIMEDOUT:
        return False
    raise KmesError(f"futex(FUTEX_WAIT) failed: {os.strerror(err)}")


def futex_wake(addr: int, count: int = INT_MAX) -> int:
    """Wake up to ``count`` waiters on the u32 at ``addr``; return how many were woken."""
    res, err = raw_syscall(
        "futex",
        ctypes.c_void_p(addr),
        ctypes.c_int(FUTEX_WAKE),
        ctypes.c_int(count),
        ctypes.c_void_p(0),
        ctypes.c_void_p(0),
        ctypes.c_uint32(0),
    )
    if res < 0:
        raise KmesError(f"futex(FUTEX_WAKE) failed: {os.strerror(err)}")
    return res


def futex_waitv(words: list[tuple[int, int]], timeout: float | None) -> int | None:
    """Sleep until any ``(addr, expected)`` u32 word changes or is woken (futex_waitv).

    Returns the index woken, -1 if a value already differed (EAGAIN) or on EINTR, None
    on timeout. Raises :class:`KmesError` with errno ENOSYS where the kernel lacks it.
    """
    nr = _FUTEX_WAITV_NR.get(platform.machine())
    if nr is None:
        raise KmesError(f"futex_waitv unknown on {platform.machine()}: {os.strerror(errno.ENOSYS)}")
    arr = (_FutexWaitv * len(words))()
    for i, (addr, val) in enumerate(words):
        arr[i].val, arr[i].uaddr, arr[i].flags = val, addr, FUTEX2_SIZE_U32
    ts_arg: object = ctypes.c_void_p(0)
    if timeout is not None:
        deadline = time.clock_gettime(time.CLOCK_MONOTONIC) + max(timeout, 0.0)
        ts_arg = ctypes.byref(_timespec(deadline))
    ctypes.set_errno(0)
    res = int(
        libc().syscall(
            ctypes.c_long(nr),
            arr,
            ctypes.c_uint(len(words)),
            ctypes.c_uint(0),
            ts_arg,
            ctypes.c_int(CLOCK_MONOTONIC),
        )
    )
    if res >= 0:
        return res
    err = ctypes.get_errno()
    if err in (errno.EAGAIN, errno.EINTR):
        return -1
    if err == errno.ETIMEDOUT:
        return None
    exc = KmesError(f"futex_waitv failed: {os.strerror(err)}")
    exc.errno = err  # type: ignore[attr-defined]
    raise exc
