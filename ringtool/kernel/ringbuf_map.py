"""Creating BPF_MAP_TYPE_RINGBUF maps with ringtool's own bpf() wrapper, including the
overwrite mode (``BPF_F_RB_OVERWRITE``, Linux 6.19+), and asking whether the running
kernel has that mode, and USER_RINGBUF maps.

``ringbuf_map_alloc`` (kernel/bpf/ringbuf.c) refuses a flag outside its
``RINGBUF_CREATE_FLAG_MASK`` with EINVAL, the same errno as for a bad size; so a refusal
of the flag is told apart by creating the same ring without it.
"""

from __future__ import annotations

import errno

from ringtool.errors import BpfSyscallError, KernelFeatureError
from ringtool.kernel import bpf

#: include/uapi/linux/bpf.h: ``BPF_F_RB_OVERWRITE = (1U << 19)``
BPF_F_RB_OVERWRITE = 1 << 19


def create_ringbuf(size: int, *, overwrite: bool = False) -> int:
    """A new RINGBUF map of ``size`` data bytes (a power of two of pages); its fd, which
    the caller closes. ``overwrite`` creates it with ``BPF_F_RB_OVERWRITE``: the producer
    overwrites the oldest records instead of failing. Raises
    :class:`~ringtool.errors.KernelFeatureError` when the kernel refuses the flag."""
    flags = BPF_F_RB_OVERWRITE if overwrite else 0
    try:
        return bpf.map_create(
            bpf.MapType.RINGBUF, key_size=0, value_size=0, max_entries=size, flags=flags
        )
    except BpfSyscallError as exc:
        if not overwrite or exc.errno != errno.EINVAL:
            raise
        bpf.close_fd(create_ringbuf(size))  # the same ring without the flag: a bad size?
        raise KernelFeatureError(
            "this kernel refuses BPF_F_RB_OVERWRITE (RINGBUF overwrite mode needs Linux "
            "6.19 or later): use a perf flight recorder (PerfBuffer(overwrite=True)) instead"
        ) from exc


def has_ringbuf_overwrite() -> bool:
    """Whether this kernel creates RINGBUF maps in overwrite mode (one page, closed at
    once)."""
    try:
        bpf.close_fd(create_ringbuf(4096, overwrite=True))
    except KernelFeatureError:
        return False
    return True


def has_user_ringbuf() -> bool:
    """Whether this kernel has BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1+; one page, closed
    at once): an unknown map type is EINVAL."""
    try:
        fd = bpf.map_create(bpf.MapType.USER_RINGBUF, key_size=0, value_size=0,
                            max_entries=4096)  # fmt: skip
    except BpfSyscallError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    bpf.close_fd(fd)
    return True


__all__ = ["BPF_F_RB_OVERWRITE", "create_ringbuf", "has_ringbuf_overwrite", "has_user_ringbuf"]
