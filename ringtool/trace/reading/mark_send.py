"""``ringtool mark TEXT``'s side: write a marker into every running trace, and make
sure it got there.

For each live trace directory of our namespaces under the pin root (opened and checked as
:mod:`ringtool.kernel.pin_root` says, every step relative to its descriptor):

1. take an exclusive ``flock`` of the directory -- one producer at a time per user
   ring, the kernel trusts a single ``producer_pos``. Only root can open the directory
   (the root is 0700 and root's), and the wait is bounded (:data:`LOCK_WAIT_S`): a
   stopped ``mark`` holding it costs one clear error, not a hang;
2. under the lock, discard the BUSY records a ``mark`` killed between reserve and
   submit left (:meth:`ringtool.UserRingBuffer.discard_abandoned`): the kernel's drain
   would stop at one for the rest of the trace;
3. write the text as one ``TRACE_DATA_LEN``-byte sample with
   :meth:`ringtool.UserRingBuffer.write`, whose header is final before it is published
   (a kill cannot leave a BUSY record);
4. run the trace's ``drain`` program with ``BPF_PROG_TEST_RUN`` and confirm: the
   ring's ``consumer_pos`` is past the sample and the program says the sample went
   into the trace's ring (bpf/trace_mark.bpf.c), which the trace reads again: it
   closes the drain's gate under the same lock before its last read
   (:meth:`ringtool.trace.reading.marks.MarkSource.close`), so a drain that passed the gate
   was done before that read, and one after it refuses. Otherwise :class:`MarkNotDeliveredError`
   says why -- ``ringtool mark`` never exits 0 with its marker missing.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from ringtool.errors import BpfSyscallError, RingFullError, RingtoolError, UsageError
from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.kernel.pin_root import (
    LOCK_WAIT_S,
    entries,
    fd_path,
    lock_at,
    open_dir_at,
    open_pin_root,
)
from ringtool.readers.user_ringbuf import UserRingBuffer
from ringtool.trace.reading.marks import (
    MARK_ENDED,
    PIN_ROOT,
    check_user_ringbuf,
    liveness,
    namespace_key,
    remove_stale_at,
)


class NoTraceError(RingtoolError):
    """No ``ringtool trace`` is running to take a marker."""

    def __init__(self) -> None:
        super().__init__(
            "no ringtool trace is running to take the marker: start `ringtool trace` first"
        )


class MarkNotDeliveredError(RingtoolError):
    """A running trace did not take the marker (its ring locked, corrupt or full)."""


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


def _lock(dfd: int, where: str) -> None:
    """Exclusive flock of ``dfd``, waiting at most :data:`LOCK_WAIT_S`."""
    if not lock_at(dfd, LOCK_WAIT_S):
        raise MarkNotDeliveredError(
            f"trace {where}: its marker ring stayed locked for {LOCK_WAIT_S:g} s "
            "by another process (a stopped `ringtool mark`? see fuser -v on it)"
        )


def _drain(prog_fd: int) -> int:
    """Run the trace's drain once; its return value (see bpf/trace_mark.bpf.c)."""
    ret = bpf.prog_test_run_raw_tp(prog_fd)
    return ret - (1 << 32) if ret >= 1 << 31 else ret


def _deliver(urb: UserRingBuffer, prog_fd: int, sample: bytes, where: str) -> None:
    """Write ``sample``, drain, and confirm it reached the trace's ring."""
    try:
        end = urb.write(sample)
    except RingFullError:  # samples a killed mark wrote but never drained: drain them
        _drain(prog_fd)
        end = urb.write(sample)
    ret = _drain(prog_fd)
    if ret == -MARK_ENDED:
        raise MarkNotDeliveredError(f"trace {where}: the trace ended before the marker was read")
    if ret < 0:
        raise MarkNotDeliveredError(
            f"trace {where}: its drain refused the marker ring ({os.strerror(-ret)}): the "
            "ring is corrupt; restart the trace to take markers again"
        )
    if urb.consumer_pos() < end:
        raise MarkNotDeliveredError(
            f"trace {where}: the marker was not drained (a record before it is still being written)"
        )
    if ret:
        raise MarkNotDeliveredError(
            f"trace {where}: its ring was full, the marker was dropped (counted in the "
            "trace's drops)"
        )


def _mark_one(
    root_fd: int, name: str, sample: bytes, where: str, note: Callable[[str], None]
) -> bool:
    """Write ``sample`` into the trace ``name`` and confirm it; False when the trace
    went away meanwhile. :class:`MarkNotDeliveredError` when it did not take it."""
    dfd = open_dir_at(root_fd, name)
    if dfd is None:
        return False
    fds: list[int] = []
    try:
        _lock(dfd, where)
        try:
            fds.append(bpf.obj_get(fd_path(dfd, "marks")))
            fds.append(bpf.obj_get(fd_path(dfd, "drain")))
        except BpfSyscallError as exc:
            if exc.errno == errno.ENOENT:  # the trace is exiting (or starting)
                return False
            raise
        with UserRingBuffer(fds[0]) as urb:
            for a in urb.discard_abandoned():
                note(f"trace {where}: discarded a marker left half-written by pid {a.owner}")
            _deliver(urb, fds[1], sample, where)
        return True
    finally:
        for fd in fds:
            bpf.close_fd(fd)
        os.close(dfd)  # drops the flock


def send_mark(text: str, root: str = PIN_ROOT, note: Callable[[str], None] | None = None) -> int:
    """Mark every running trace with ``text`` and confirm each took it; returns how
    many did. ``note`` gets a line for each half-written marker of a killed ``mark``
    that was discarded. :class:`KernelFeatureError` without USER_RINGBUF,
    :class:`~ringtool.errors.UnsafeDirectoryError` when ``root`` is not safe to use,
    :class:`NoTraceError` when no trace runs, :class:`MarkNotDeliveredError` naming each
    trace that did not take it (after the others were marked)."""
    sample = encode(text, load_layout().constants["TRACE_DATA_LEN"])
    check_user_ringbuf()
    root_fd = open_pin_root(root, create=False)
    if root_fd is None:
        raise NoTraceError
    failed: list[str] = []
    marked = 0
    try:
        remove_stale_at(root_fd)
        ns = namespace_key()
        for name in sorted(n for n in entries(root_fd) if liveness(n, ns)):
            where = os.path.join(root, name)
            try:
                marked += _mark_one(root_fd, name, sample, where, note or (lambda _: None))
            except MarkNotDeliveredError as exc:
                failed.append(str(exc))
            except RingtoolError as exc:
                failed.append(f"trace {where}: {exc}")
    finally:
        os.close(root_fd)
    if failed:
        done = f" (marked {marked} other trace{'s' * (marked != 1)})" if marked else ""
        raise MarkNotDeliveredError("; ".join(failed) + done)
    if not marked:
        raise NoTraceError
    return marked


__all__ = ["LOCK_WAIT_S", "MarkNotDeliveredError", "NoTraceError", "encode", "send_mark"]
