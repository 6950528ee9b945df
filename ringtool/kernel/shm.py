"""Shared memory for KMES buffers: sealed memfds and double mappings.

Python's ``mmap`` module can't place a mapping at a fixed address, which a double
mapping needs (KMES seed §5.1.4): we reserve address space with an anonymous
``PROT_NONE`` mapping and replace it with two ``MAP_FIXED`` mappings of the same file
through libc's ``mmap``.
"""

from __future__ import annotations

import ctypes
import errno as errno_mod
import fcntl
import os
from collections.abc import Callable
from functools import cache

from ringtool.errors import KmesError, MmapError
from ringtool.kernel.libc import libc

PROT_NONE = 0x0
PROT_READ = 0x1
PROT_WRITE = 0x2
MAP_SHARED = 0x01
MAP_PRIVATE = 0x02
MAP_FIXED = 0x10
MAP_ANONYMOUS = 0x20
MAP_NORESERVE = 0x4000
MAP_FAILED = ctypes.c_void_p(-1).value

#: Seals every KMES memfd carries (DESIGN.md attach protocol: sealed against shrink and
#: grow; F_SEAL_SEAL so no one can add F_SEAL_WRITE and stall the writer).
KMES_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def create_sealed_memfd(name: str, size: int) -> int:
    """A new memfd of ``size`` zero bytes sealed with :data:`KMES_SEALS`; caller owns it."""
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError as exc:
        raise KmesError(f"memfd_create({name!r}) failed: {exc.strerror}") from None
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, KMES_SEALS)
    except OSError as exc:
        os.close(fd)
        raise KmesError(f"cannot size/seal memfd {name!r}: {exc.strerror}") from None
    return fd


def memfd_seals(fd: int) -> int:
    """The seals on ``fd`` (F_GET_SEALS)."""
    return fcntl.fcntl(fd, fcntl.F_GET_SEALS)


@cache
def _mprotect() -> Callable[[int, int, int], int]:
    fn = libc().mprotect
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return fn  # type: ignore[no-any-return]


def _mmap(addr: int | None, length: int, prot: int, flags: int, fd: int, off: int) -> int:
    ctypes.set_errno(0)
    res = libc().mmap(addr, length, prot, flags, fd, off)
    if res is None or res == MAP_FAILED:
        err = ctypes.get_errno()
        raise MmapError(err, f"mmap of {length} bytes failed: {os.strerror(err)}")
    return int(res)


class DoubleMapping:
    """``fd`` mapped as ``[head][ring][ring again]``: the ring is double-mapped (§5.1.4).

    The file must be ``head_size + ring_size`` bytes; both sizes multiples of the page
    size. The head (KMES: metadata page) is always read-write; the ring is read-write
    only if ``writable_ring`` (consumers map it read-only). ``head`` and ``ring`` are
    byte memoryviews (``ring`` is ``2 * ring_size`` long, so ``ring[i]`` and
    ``ring[i + ring_size]`` are the same byte). ``addr`` is the head's address (futexes
    need it).

    Contract: after :meth:`close` the views are released; touching memory through a
    view obtained earlier is undefined (the memory is unmapped). Don't close while
    another thread is reading.
    """

    def __init__(self, fd: int, head_size: int, ring_size: int, *, writable_ring: bool) -> None:
        self.head_size = head_size
        self.ring_size = ring_size
        self.total = head_size + 2 * ring_size
        rw = PROT_READ | PROT_WRITE
        ring_prot = rw if writable_ring else PROT_READ
        base = _mmap(
            None, self.total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0
        )
        self.addr = base
        try:
            # Mapping 1: file offset 0 -> head + ring (then the ring part made read-only).
            _mmap(base, head_size + ring_size, rw, MAP_SHARED | MAP_FIXED, fd, 0)
            if not writable_ring and _mprotect()(base + head_size, ring_size, PROT_READ) != 0:
                err = ctypes.get_errno() or errno_mod.EINVAL
                raise MmapError(err, f"mprotect failed: {os.strerror(err)}")
            # Mapping 2: file offset head_size -> the ring again, right after the first.
            _mmap(
                base + head_size + ring_size,
                ring_size,
                ring_prot,
                MAP_SHARED | MAP_FIXED,
                fd,
                head_size,
            )
        except BaseException:
            libc().munmap(base, self.total)
            raise
        head = (ctypes.c_char * head_size).from_address(base)
        ring = (ctypes.c_char * (2 * ring_size)).from_address(base + head_size)
        self.head: memoryview = memoryview(head).cast("B")
        ring_view = memoryview(ring).cast("B")
        self.ring: memoryview = ring_view if writable_ring else ring_view.toreadonly()
        self._closed = False

    def close(self) -> None:
        """Release the views and unmap everything (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.head.release()
        self.ring.release()
        if libc().munmap(self.addr, self.total) != 0:
            err = ctypes.get_errno()
            raise MmapError(err, f"munmap failed: {os.strerror(err)}")

    @property
    def closed(self) -> bool:
        return self._closed
