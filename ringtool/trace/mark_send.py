"""``ringtool mark TEXT``'s side: write a marker into every running trace.

For each live trace directory (:mod:`ringtool.trace.marks`): take an exclusive
``flock`` of the directory (one producer at a time per user ring: the kernel trusts a
single ``producer_pos``), write the text as one ``TRACE_DATA_LEN``-byte sample
with :class:`ringtool.UserRingBuffer`, then run the trace's ``drain`` program with
``BPF_PROG_TEST_RUN``: the marker is in the trace's ring, stamped with the kernel's
clock, before this returns.
"""

from __future__ import annotations

import errno
import fcntl
import os

from ringtool.errors import BpfSyscallError, RingtoolError, UsageError
from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.readers.user_ringbuf import UserRingBuffer
from ringtool.trace.marks import PIN_ROOT, check_user_ringbuf, is_live, remove_stale

_WAIT_MS = 1000


class NoTraceError(RingtoolError):
    """No ``ringtool trace`` is running to take a marker."""


def encode(text: str, data_len: int) -> bytes:
    """The sample for ``text``: UTF-8, NUL-padded to ``data_len`` bytes (the record's
    ``data``, ``TRACE_DATA_LEN`` of bpf/trace_event.h, which keeps a final NUL);
    :class:`UsageError` when too long or holding a NUL."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) >= data_len:
        raise UsageError(f"mark text is {len(raw)} bytes: at most {data_len - 1}")
    if b"\0" in raw:
        raise UsageError("mark text holds a NUL byte")
    return raw.ljust(data_len, b"\0")


def _mark_one(path: str, sample: bytes) -> bool:
    """Write ``sample`` into the trace at ``path`` and drain it; False when the trace
    went away meanwhile."""
    try:
        dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return False
    fds: list[int] = []
    try:
        fcntl.flock(dfd, fcntl.LOCK_EX)
        try:
            fds.append(bpf.obj_get(os.path.join(path, "marks")))
            fds.append(bpf.obj_get(os.path.join(path, "drain")))
        except BpfSyscallError as exc:
            if exc.errno == errno.ENOENT:  # the trace is exiting
                return False
            raise
        with UserRingBuffer(fds[0]) as urb, urb.reserve_blocking(len(sample), _WAIT_MS) as r:
            r.buf[:] = sample
        bpf.prog_test_run_raw_tp(fds[1])
        return True
    finally:
        for fd in fds:
            bpf.close_fd(fd)
        os.close(dfd)  # drops the flock


def send_mark(text: str, root: str = PIN_ROOT) -> int:
    """Mark every running trace with ``text``; returns how many took it.
    :class:`KernelFeatureError` without USER_RINGBUF, :class:`NoTraceError` when no
    trace runs."""
    sample = encode(text, load_layout().constants["TRACE_DATA_LEN"])
    check_user_ringbuf()
    remove_stale(root)
    try:
        names = sorted(n for n in os.listdir(root) if is_live(n))
    except FileNotFoundError:
        names = []
    marked = sum(_mark_one(os.path.join(root, n), sample) for n in names)
    if not marked:
        raise NoTraceError(
            "no ringtool trace is running to take the marker: start `ringtool trace` first"
        )
    return marked


__all__ = ["NoTraceError", "encode", "send_mark"]
