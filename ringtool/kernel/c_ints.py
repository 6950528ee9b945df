"""C integers for BCC's map items: a BCC table's keys and values are ctypes values."""

from __future__ import annotations

import ctypes


def u32(value: int) -> ctypes.c_uint32:
    """``value`` as a C ``u32`` (a BCC table key or value of that type)."""
    return ctypes.c_uint32(value)


__all__ = ["u32"]
