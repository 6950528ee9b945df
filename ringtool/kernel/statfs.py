"""statfs(2): the file system type of a path (Python's ``os`` has no wrapper)."""

from __future__ import annotations

import ctypes
import os


class _Statfs(ctypes.Structure):
    # f_type is the first member on every Linux ABI; the rest is room to spare
    _fields_ = [("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 256)]


def fs_type(path: str) -> int:
    """statfs(2)'s ``f_type`` of ``path`` (a magic number of linux/magic.h, unsigned
    32-bit); ``OSError`` with statfs's errno when it cannot be asked."""
    buf = _Statfs()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.statfs(os.fsencode(path), ctypes.byref(buf)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return int(buf.f_type) & 0xFFFFFFFF


__all__ = ["fs_type"]
