"""The values of a disk event (``struct trace_disk``, bpf/trace_disk.c) that are not
plain numbers: its device and the operation its ``rwbs`` letters name.

``dev`` is the kernel's own ``dev_t`` (include/linux/kdev_t.h: the major number in
the bits from 20 up, the minor in the 20 below), not the userspace encoding of
``stat(2)``'s ``st_rdev``. ``rwbs`` is what blktrace and the block tracepoints show
(``blk_fill_rwbs``, block/blk-core.c): an ``F`` first when the request flushes the
cache before it (REQ_PREFLUSH), the operation (``R`` read, ``W`` write, ``D``
discard, ``DE`` secure erase, ``F`` flush, ``N`` another), then its flags (``F``
FUA, ``A`` readahead, ``S`` sync, ``M`` metadata).
"""

from __future__ import annotations

import os

#: The kernel's MINORBITS.
MINOR_BITS = 20
#: The operation letters of ``rwbs`` by name.
OPS = {"R": "read", "W": "write", "D": "discard", "F": "flush", "N": "other"}
SYSFS_DEV = "/sys/dev/block"


def major_minor(dev: int) -> tuple[int, int]:
    """``(major, minor)`` of a kernel ``dev_t``."""
    return dev >> MINOR_BITS, dev & ((1 << MINOR_BITS) - 1)


def dev_text(dev: int) -> str:
    """``"7:0"``: the device's major and minor numbers."""
    major, minor = major_minor(dev)
    return f"{major}:{minor}"


def disk_name(dev: int, sysfs: str = SYSFS_DEV) -> str:
    """The block device's kernel name (``loop0``, ``sda1``, ``nvme0n1``) from the
    ``sysfs`` link of its numbers (``/sys/dev/block/7:0``); ``""`` when there is none
    (the device went away, or another mount namespace's /sys)."""
    try:
        return os.path.basename(os.readlink(os.path.join(sysfs, dev_text(dev))))
    except OSError:
        return ""


def op(rwbs: str) -> str:
    """The operation of ``rwbs``: ``read``, ``write``, ``discard``, ``secure-erase``,
    ``flush`` or ``other`` (a preflush before a write is the write's flag, not the
    operation); ``""`` for an empty one."""
    if len(rwbs) >= 2 and rwbs[0] == "F" and rwbs[1] in "RWDFN":
        rwbs = rwbs[1:]  # REQ_PREFLUSH, then the operation
    if rwbs.startswith("DE"):
        return "secure-erase"
    return OPS.get(rwbs[:1], "other") if rwbs else ""


def sync(rwbs: str) -> bool:
    """Whether the request is synchronous (REQ_SYNC: ``S``, a letter of no operation)."""
    return "S" in rwbs


__all__ = ["MINOR_BITS", "OPS", "dev_text", "disk_name", "major_minor", "op", "sync"]
