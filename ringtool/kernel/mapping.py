"""mmap of BPF map fds through Python's ``mmap`` module (no MAP_FIXED needed here).

Failures raise :class:`ringtool.errors.MmapError` naming the region and the errno.
"""

from __future__ import annotations

import mmap

from ringtool.errors import MmapError

PAGE_SIZE = mmap.PAGESIZE


def map_shared(fd: int, length: int, *, offset: int, writable: bool, what: str) -> mmap.mmap:
    """``mmap(NULL, length, PROT_READ[|PROT_WRITE], MAP_SHARED, fd, offset)``."""
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    try:
        return mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=prot, offset=offset)
    except OSError as exc:
        mode = "read-write" if writable else "read-only"
        raise MmapError(
            exc.errno or 0,
            f"mmap of {what} ({length} bytes at offset {offset}, {mode}) refused: "
            f"{exc.strerror}; check RLIMIT_MEMLOCK / map type / size",
        ) from exc
