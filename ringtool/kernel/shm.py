"""Shared memory for KMES buffers: sealed memfds and double mappings.

Python's ``mmap`` module can't place a mapping at a fixed address, which a double
mapping needs (docs/kmes.md §2.4): we reserve address space with an anonymous
``PROT_NONE`` mapping and replace it with ``MAP_FIXED`` mappings of the metadata file
and (twice) the data file through libc's ``mmap``.

Seals (docs/kmes.md §2.3). Every KMES memfd is sealed against shrink and
grow (:data:`SIZE_SEALS`). The data memfd additionally gets ``F_SEAL_FUTURE_WRITE``
once the writer's own writable mapping exists (:func:`seal_future_write`): the writer's
mapping keeps working, while every later ``write()``, ``fallocate()`` and
``mmap(PROT_WRITE, MAP_SHARED)`` through *any* descriptor of that file (including a
re-open of ``/proc/<pid>/fd/N`` with ``O_RDWR``) fails with EPERM. Both memfds end with
``F_SEAL_SEAL`` so no consumer can add seals of its own (e.g. ``F_SEAL_FUTURE_WRITE``
on the metadata page, which would stop later consumers from mapping it writable).
"""

from __future__ import annotations

import ctypes
import fcntl
import os

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

#: ``F_SEAL_FUTURE_WRITE`` (linux/fcntl.h, Linux >= 5.1); Python's fcntl lacks it.
F_SEAL_FUTURE_WRITE = 0x0010
#: Seals every KMES memfd carries from its creation: its size never changes.
SIZE_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


def create_sealed_memfd(name: str, size: int) -> int:
    """A new memfd of ``size`` zero bytes sealed with :data:`SIZE_SEALS`; caller owns it.

    Still accepts more seals: finish with :func:`seal_future_write` (data) or
    :func:`seal_final` (metadata).
    """
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError as exc:
        raise KmesError(f"memfd_create({name!r}) failed: {exc.strerror}") from None
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SIZE_SEALS)
    except OSError as exc:
        os.close(fd)
        raise KmesError(f"cannot size/seal memfd {name!r}: {exc.strerror}") from None
    return fd


def _add_seals(fd: int, seals: int) -> None:
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError as exc:
        raise KmesError(f"cannot seal memfd (seals {seals:#x}): {exc.strerror}") from None


def seal_future_write(fd: int) -> None:
    """``F_SEAL_FUTURE_WRITE`` then ``F_SEAL_SEAL`` on ``fd``: from now on only mappings
    that already exist can write it. Call after the writer mapped it writable."""
    _add_seals(fd, F_SEAL_FUTURE_WRITE)
    _add_seals(fd, fcntl.F_SEAL_SEAL)


def seal_final(fd: int) -> None:
    """``F_SEAL_SEAL`` on ``fd``: no one can add seals (the file stays writable)."""
    _add_seals(fd, fcntl.F_SEAL_SEAL)


def memfd_seals(fd: int) -> int:
    """The seals on ``fd`` (F_GET_SEALS)."""
    return fcntl.fcntl(fd, fcntl.F_GET_SEALS)


def reopen(fd: int, flags: int) -> int:
    """A new open file description of ``fd``'s file (``/proc/self/fd/N``) with ``flags``
    (``O_CLOEXEC`` added); caller owns it. ``O_RDONLY`` gives a descriptor that can't
    be mapped writable (``MAP_SHARED``)."""
    try:
        return os.open(f"/proc/self/fd/{fd}", flags | os.O_CLOEXEC)
    except OSError as exc:
        raise KmesError(f"cannot re-open descriptor {fd}: {exc.strerror}") from None


def _mmap(addr: int | None, length: int, prot: int, flags: int, fd: int, off: int) -> int:
    ctypes.set_errno(0)
    res = libc().mmap(addr, length, prot, flags, fd, off)
    if res is None or res == MAP_FAILED:
        err = ctypes.get_errno()
        raise MmapError(err, f"mmap of {length} bytes failed: {os.strerror(err)}")
    return int(res)


class DoubleMapping:
    """``[head_fd][ring_fd][ring_fd again]``: the ring is double-mapped (docs/kmes.md §2.4).

    ``head_fd`` (``head_size`` bytes; KMES: the metadata page) is mapped read-write at
    the start of a reserved region of ``head_size + 2 * ring_size`` bytes, ``ring_fd``
    (``ring_size`` bytes) twice right after it, read-write only if ``writable_ring``
    (consumers map it read-only). Both sizes are multiples of the page size. ``head``
    and ``ring`` are byte memoryviews (``ring`` is ``2 * ring_size`` long, so ``ring[i]``
    and ``ring[i + ring_size]`` are the same byte). ``addr`` is the head's address
    (futexes need it). The descriptors stay the caller's (a mapping doesn't need them).

    Contract: after :meth:`close` the views are released; touching memory through a
    view obtained earlier is undefined (the memory is unmapped). Don't close while
    another thread is reading.
    """

    def __init__(
        self, head_fd: int, ring_fd: int, head_size: int, ring_size: int, *, writable_ring: bool
    ) -> None:
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
            _mmap(base, head_size, rw, MAP_SHARED | MAP_FIXED, head_fd, 0)
            ring_at = base + head_size
            _mmap(ring_at, ring_size, ring_prot, MAP_SHARED | MAP_FIXED, ring_fd, 0)
            _mmap(ring_at + ring_size, ring_size, ring_prot, MAP_SHARED | MAP_FIXED, ring_fd, 0)
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
