"""An open event's ``flags`` and ``mode`` as text: ``O_WRONLY|O_CREAT|O_TRUNC``, ``0644``.

The values are the running system's (:mod:`os`: the C library's, which are the
kernel's for this architecture), so the names match what the traced process passed:
the access mode (``O_RDONLY``, ``O_WRONLY``, ``O_RDWR``) first, then each flag set,
multi-bit flags (``O_SYNC`` holds ``O_DSYNC``, ``O_TMPFILE`` holds ``O_DIRECTORY``)
before their parts; bits with no name are one hex number at the end. ``O_LARGEFILE``
is 0 in the 64-bit C library, but a process may pass the kernel's bit (the kernel
adds it itself on 64-bit): its value is the kernel's ``asm/fcntl.h`` one.

Used by the text outputs only; JSON and CSV carry the numbers. Decoding is per
distinct value (:func:`names_of`), not per event.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from typing import Any

#: The kernel's O_LARGEFILE per machine (include/uapi/asm-generic/fcntl.h, and the
#: architectures that override it); the C library says 0 on 64-bit.
_LARGEFILE = {"aarch64": 0o400000, "arm64": 0o400000}.get(platform.machine(), 0o100000)

_NAMES = ("O_SYNC", "O_TMPFILE", "O_CREAT", "O_EXCL", "O_NOCTTY", "O_TRUNC", "O_APPEND",
          "O_NONBLOCK", "O_DSYNC", "O_ASYNC", "O_DIRECT", "O_DIRECTORY", "O_NOFOLLOW",
          "O_NOATIME", "O_CLOEXEC", "O_PATH")  # fmt: skip

#: (name, bits) in decoding order: the multi-bit flags before the flags they hold.
FLAGS: tuple[tuple[str, int], ...] = (
    *((n, int(getattr(os, n))) for n in _NAMES if getattr(os, n, 0)),
    ("O_LARGEFILE", _LARGEFILE),
)
ACCMODE = 3
_ACCESS = {0: "O_RDONLY", int(os.O_WRONLY): "O_WRONLY", int(os.O_RDWR): "O_RDWR"}
#: The flags with which ``mode`` is used (open(2): with O_CREAT or O_TMPFILE). O_TMPFILE
#: holds the O_DIRECTORY bit: it is set only when all of its bits are.
_CREAT = int(os.O_CREAT)
_TMPFILE = int(getattr(os, "O_TMPFILE", 0))


def uses_mode(flags: int) -> bool:
    """Whether the kernel reads ``mode`` for ``flags``: O_CREAT, or all of O_TMPFILE's
    bits (O_DIRECTORY alone is not O_TMPFILE)."""
    return bool(flags & _CREAT) or (_TMPFILE != 0 and flags & _TMPFILE == _TMPFILE)


def flag_text(flags: int) -> str:
    """``flags`` as ``O_ACCESS|O_FLAG|...`` (see the module doc)."""
    parts = [_ACCESS.get(flags & ACCMODE, f"{flags & ACCMODE:#x}")]
    rest = flags & ~ACCMODE
    for name, bits in FLAGS:
        if rest & bits == bits:
            parts.append(name)
            rest &= ~bits
    if rest:
        parts.append(f"{rest:#x}")
    return "|".join(parts)


def mode_text(flags: int | None, mode: int | None) -> str:
    """`` 0644``: ``mode`` in octal after a space when ``flags`` make the kernel use it
    (O_CREAT or O_TMPFILE), else ``""`` (also when either is unknown)."""
    if flags is None or mode is None or not uses_mode(flags):
        return ""
    return f" {mode:04o}"


def names_of(values: Sequence[Any]) -> list[str]:
    """`` O_...``: :func:`flag_text` of each value after a space (``""`` for ``None``:
    unknown), each distinct value decoded once."""
    texts = {v: "" if v is None else " " + flag_text(int(v)) for v in set(values)}
    return [texts[v] for v in values]


__all__ = ["FLAGS", "flag_text", "mode_text", "names_of", "uses_mode"]
