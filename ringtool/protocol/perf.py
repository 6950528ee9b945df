"""Perf ring buffer consumer protocol over plain buffers (no syscalls).

Layout: :mod:`ringtool.protocol.perf_layout` (the data area is mapped *once*: a
record that runs past its end continues at offset 0, so it is reassembled here).

Positions are free-running u64 byte counts; ``pos & (data_size - 1)`` is the offset.

Memory ordering (perf_event.h comment on data_head; kernel/events/ring_buffer.c):

1. ``data_head`` is read with acquire semantics — pairs with the ``smp_wmb()`` before
   the ``data_head`` store in ``perf_output_put_handle`` — so every record before it
   is fully written.
2. ``data_tail`` is stored with release semantics — pairs with the ``READ_ONCE(
   rb->user_page->data_tail)`` + ``smp_mb()`` in ``perf_output_begin`` — so the kernel
   reuses space only after we finished reading it.

Each is one aligned 8-byte load/store through ``memoryview.cast("Q")``. On x86-64
(TSO) a plain aligned load is an acquire and a plain aligned store a release, and
CPython adds no reordering of its own; an ARM64 port would need ``ldar``/``stlr`` (or a
``dmb``) around them, as :mod:`ringtool.protocol.ringbuf` explains. Headers and bodies
are ordinary data published by ``data_head``: they need no atomic access.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ringtool.errors import CorruptRecordError, RingSizeError, hexdump
from ringtool.protocol.perf_layout import (
    BYTES,
    DATA_HEAD_OFF,
    DATA_TAIL_OFF,
    HEADER_SIZE,
    LOST,
    LOST_COUNT_OFF,
    LOST_SIZE,
    PERF_RECORD_LOST,
    PERF_RECORD_SAMPLE,
    RAW_OFF,
    RUN,
    SKIP,
    TYPE_MASK,
    Segment,
    UserPage,
)

# Re-exported: the offsets tests and readers use come from here.
__all__ = ["DATA_HEAD_OFF", "DATA_TAIL_OFF", "SKIP", "PerfRing", "UserPage"]

_RUN_VECTOR_MIN = 16  # candidate runs at least this long are checked with numpy


class PerfRing:
    """The consumer side of one perf ring: a user page and a data area (buffers).

    ``data`` is exactly ``size`` bytes, a power of two. ``cpu`` is handed to callbacks.
    ``lost_total`` sums the ``lost`` fields of the PERF_RECORD_LOST records consumed,
    ``unknown`` counts records of other types (skipped). Every walk commits
    ``data_tail`` once, on every exit path, with everything consumed before it; a
    corrupt record raises :class:`CorruptRecordError` and stays unconsumed.
    """

    def __init__(self, page: Any, data: Any, *, cpu: int = 0, index: int = 0) -> None:
        self.data = memoryview(data).cast("B")
        size = len(self.data)
        if size < 8 or size & (size - 1):
            raise RingSizeError(f"perf data area of {size} bytes is not a power of two")
        self.size = size
        self.mask = size - 1
        self.cpu = cpu
        self.index = index
        self.page = UserPage(page)
        self._q = self.data.cast("Q")
        self._i = self.data.cast("I")
        self.lost_total = 0
        self.unknown = 0
        self.lost_cb: Callable[[int, int], Any] | None = None
        # LOST/unknown records before this position are accounted already: a batch
        # copied out but given back (not committed) is walked again without recounting.
        self._noted_upto = 0

    def release(self) -> None:
        """Drop the views (required before the underlying mmap can be closed)."""
        for v in (self._q, self._i, self.data):
            v.release()
        self.page.release()

    # --- raw access ------------------------------------------------------------------

    def read_bytes(self, pos: int, n: int) -> bytes:
        """``n`` bytes at ring position ``pos``, joined across the wrap."""
        off = pos & self.mask
        if off + n <= self.size:
            return self.data[off : off + n].tobytes()
        first = self.size - off
        return self.data[off:].tobytes() + self.data[: n - first].tobytes()

    def corrupt(self, why: str, pos: int) -> CorruptRecordError:
        off = pos & self.mask
        start = max(0, off - 32) & ~15
        end = min(self.size, off + 64)
        dump = hexdump(self.data[start:end], base=start, mark=off - start)
        return CorruptRecordError(f"perf ring cpu {self.cpu}: {why}", position=pos, dump=dump)

    def _check_size(self, size: int, pos: int, head: int) -> None:
        if size < HEADER_SIZE or size & 7 or size > self.size:
            raise self.corrupt(f"record size {size} is < 8, not 8-aligned or > the ring", pos)
        if size > head - pos:
            raise self.corrupt(f"record size {size} runs past data_head {head:#x}", pos)

    # --- the walk --------------------------------------------------------------------

    def segments(self, pos: int, head: int, limit: int) -> Iterator[Segment]:
        """Records from ``pos`` to ``head`` as segments, at most ``limit`` SAMPLEs.

        A RUN is ``n`` consecutive SAMPLE records with identical headers and raw sizes
        lying whole inside the data area: payload ``i`` is ``data[offset + i*stride :
        + raw_len]``. Everything else (a wrapped or split record, LOST, other types)
        is one segment. Long runs are verified with one numpy pass over the strided
        headers; nothing here commits.
        """
        if head - pos > self.size or head < pos:
            raise self.corrupt(f"data_head {head:#x} is not within one ring of the tail", pos)
        q, i32, size, mask = self._q, self._i, self.size, self.mask
        got = 0
        while pos < head and got < limit:
            off = pos & mask
            if not off & 7:
                v = q[off >> 3]
                rsize = v >> 48
                end = off + rsize
                if v & TYPE_MASK == PERF_RECORD_SAMPLE and end <= size:
                    self._check_size(rsize, pos, head)
                    raw = i32[(off >> 2) + 2] if rsize >= 16 else size
                    if raw + RAW_OFF > rsize:
                        raise self.corrupt(f"raw size {raw} overruns record of {rsize}", pos)
                    n = 1
                    k = min((size - off) // rsize, (head - pos) // rsize, limit - got)
                    if k >= _RUN_VECTOR_MIN:
                        n = self._run_length(off, rsize, k, v, raw)
                    else:
                        nxt = end
                        while n < k and q[nxt >> 3] == v and i32[(nxt >> 2) + 2] == raw:
                            n += 1
                            nxt += rsize
                    got += n
                    new = pos + n * rsize
                    yield (RUN, pos, new, off, n, rsize, raw, None)
                    pos = new
                    continue
            # Slow path: misaligned, wrapped, LOST or unknown record.
            typ, rsize = self._header(pos, head)
            if typ == PERF_RECORD_SAMPLE:
                if rsize < 16:
                    raise self.corrupt(f"SAMPLE record of {rsize} bytes", pos)
                body = self.read_bytes(pos, rsize)
                raw = int.from_bytes(body[8:12], "little")
                if raw + RAW_OFF > rsize:
                    raise self.corrupt(f"raw size {raw} overruns record of {rsize}", pos)
                got += 1
                yield (BYTES, pos, pos + rsize, off, 1, rsize, raw, body[RAW_OFF : RAW_OFF + raw])
            elif typ == PERF_RECORD_LOST:
                if rsize < LOST_SIZE:
                    raise self.corrupt(f"LOST record of {rsize} bytes", pos)
                lost = int.from_bytes(self.read_bytes(pos + LOST_COUNT_OFF, 8), "little")
                yield (LOST, pos, pos + rsize, off, lost, rsize, 0, None)
            else:
                yield (SKIP, pos, pos + rsize, off, 0, rsize, 0, None)
            pos += rsize

    def _header(self, pos: int, head: int) -> tuple[int, int]:
        """(type, size) of the header at ``pos`` (possibly split by the wrap), checked."""
        if head - pos < HEADER_SIZE:
            raise self.corrupt(f"{head - pos} bytes before data_head: no room for a header", pos)
        hdr = self.read_bytes(pos, HEADER_SIZE)
        typ = int.from_bytes(hdr[0:4], "little")
        rsize = int.from_bytes(hdr[6:8], "little")
        self._check_size(rsize, pos, head)
        return typ, rsize

    def _run_length(self, off: int, stride: int, k: int, v: int, raw: int) -> int:
        """How many of the ``k`` records from ``off`` (stride ``stride``) have header
        ``v`` and raw size ``raw``: one vectorised pass over the strided fields."""
        heads = np.ndarray((k,), dtype="<u8", buffer=self.data, offset=off, strides=(stride,))
        raws = np.ndarray((k,), dtype="<u4", buffer=self.data, offset=off + 8, strides=(stride,))
        bad = np.flatnonzero((heads != v) | (raws != raw))
        del heads, raws  # drop the exports of the shared view
        return int(bad[0]) if len(bad) else k

    def _note(self, seg: Segment) -> None:
        """Account a LOST / unknown segment (calls ``lost_cb(cpu, count)``), once."""
        if seg[1] < self._noted_upto:
            return
        self._noted_upto = seg[2]
        if seg[0] == LOST:
            self.lost_total += seg[4]
            if self.lost_cb is not None:
                self.lost_cb(self.cpu, seg[4])
        else:
            self.unknown += 1

    # --- consumer styles -------------------------------------------------------------

    def drain(self, sample_cb: Callable[[int, memoryview], Any], limit: int) -> tuple[int, int]:
        """Call ``sample_cb(cpu, view)`` for up to ``limit`` samples, in order; LOST
        records go to ``lost_cb``. The view is released when the callback returns.
        A negative return value stops at once (that record counts as consumed, as does
        one whose callback raises). Returns ``(samples delivered, stop value or 0)``.
        """
        page, data, cpu = self.page, self.data, self.cpu
        page.check_tail()  # the walk starts from our own tail only
        pos = page.data_tail
        head = page.data_head  # acquire (see module doc)
        n = 0
        stop = 0
        try:
            for seg in self.segments(pos, head, limit):
                kind, start, end, off, cnt, stride, raw, payload = seg
                if kind == RUN:
                    first = off + RAW_OFF
                    s = first
                    view = data[0:0]
                    try:
                        for s in range(first, first + cnt * stride, stride):
                            view = data[s : s + raw]
                            ret = sample_cb(cpu, view)
                            try:  # not suppress(): that costs a context manager per record
                                view.release()
                            except BufferError:  # the callback exported it (numpy)
                                pass
                            if ret is not None and ret < 0:
                                stop = int(ret)
                                break
                    finally:
                        done = (s - first) // stride + 1  # a raising record is consumed
                        n += done
                        pos = start + done * stride
                        try:
                            view.release()
                        except BufferError:  # exported by the callback (numpy)
                            pass
                    if stop:
                        return n, stop
                elif kind == BYTES:
                    pos = end
                    n += 1
                    ret = sample_cb(cpu, memoryview(payload or b""))
                    if ret is not None and ret < 0:
                        stop = int(ret)
                        return n, stop
                else:
                    pos = end
                    self._note(seg)
        finally:
            if pos != page.data_tail:
                page.set_data_tail(pos)
        return n, stop

    def spans(self, limit: int) -> tuple[list[Segment], int, int]:
        """The sample segments of up to ``limit`` samples, the position they start
        from and the position after them (LOST/unknown records accounted). Nothing is
        committed: the caller commits with :meth:`advance` when done with the data. A
        corrupt record after samples ends the walk early; one with no sample before it
        is raised, after committing the LOST/unknown records before it."""
        self.page.check_tail()  # the walk starts from our own tail only
        start = pos = self.page.data_tail
        head = self.page.data_head  # acquire (see module doc)
        out: list[Segment] = []
        try:
            for seg in self.segments(pos, head, limit):
                if seg[0] > BYTES:
                    self._note(seg)
                else:
                    out.append(seg)
                pos = seg[2]
        except CorruptRecordError:
            if not out:
                self.commit(pos)
                raise
        return out, start, pos

    def commit(self, pos: int) -> None:
        """Release-store ``data_tail`` (see :meth:`UserPage.set_data_tail`)."""
        if pos != self.page.data_tail:
            self.page.set_data_tail(pos)

    def advance(self, pos: int) -> None:
        """Commit ``pos`` if it is ahead of ``data_tail`` (never move back: the kernel
        may already have reused the space behind it)."""
        if pos > self.page.data_tail:
            self.page.set_data_tail(pos)

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` samples from ``start`` (LOST and
        unknown records before them included). Re-walks records that are still
        uncommitted, so the kernel cannot have changed them."""
        pos = start
        if n <= 0:
            return pos
        for seg in self.segments(start, self.page.data_head, n):
            if seg[0] > BYTES:
                self._note(seg)  # no-op when accounted already
            pos = seg[2]
        return pos

    def copy_pending(self, limit: int) -> tuple[list[bytes], int, int]:
        """Owned copies of up to ``limit`` payloads, the position they start from and
        the position after them; commits nothing (see :meth:`spans`)."""
        segs, start, end = self.spans(limit)
        out: list[bytes] = []
        data = self.data
        for kind, _s, _e, off, cnt, stride, raw, payload in segs:
            if kind == RUN:
                blob = data[off : off + cnt * stride].tobytes()
                out.extend([blob[s : s + raw] for s in range(RAW_OFF, cnt * stride, stride)])
            else:
                out.append(payload or b"")
        return out, start, end

    def copy_out(self, limit: int) -> list[bytes]:
        """Owned copies of up to ``limit`` payloads; commits once."""
        out, _start, end = self.copy_pending(limit)
        self.advance(end)
        return out

    def views(self, limit: int) -> tuple[list[memoryview], int, int]:
        """Views of up to ``limit`` payloads (wrapped ones are reassembled copies), the
        position they start from and the one after them; commits nothing."""
        segs, start, end = self.spans(limit)
        data = self.data
        views: list[memoryview] = []
        for kind, _s, _e, off, cnt, stride, raw, payload in segs:
            if kind == RUN:
                first = off + RAW_OFF
                stop = first + cnt * stride
                views.extend([data[s : s + raw] for s in range(first, stop, stride)])
            else:
                views.append(memoryview(payload or b""))
        return views, start, end

    def lease(self, limit: int) -> tuple[list[memoryview], Callable[[], None]]:
        """:meth:`views` and a callable committing them all."""
        views, _start, end = self.views(limit)
        return views, lambda: self.advance(end)

    def read_batch(self, dtype: np.dtype[Any], limit: int) -> np.ndarray[Any, Any]:
        """Up to ``limit`` payloads decoded as ``dtype`` (see :meth:`batch`; the array
        is the caller's own); commits once."""
        parts, _start, end, _n = self.batch(dtype, limit, copy=True)
        self.advance(end)
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def batch(
        self, dtype: np.dtype[Any], limit: int, *, copy: bool
    ) -> tuple[list[np.ndarray[Any, Any]], int, int, int]:
        """Up to ``limit`` payloads as ``dtype`` arrays, one per segment; returns
        ``(arrays, start position, position after them, samples)``. Commits nothing
        (LOST/unknown records are accounted, see :meth:`spans`).

        A RUN whose raw size is at least ``dtype.itemsize`` (the kernel pads raw data,
        so a payload may be longer than the dtype: its first ``itemsize`` bytes are
        decoded) is one strided ``dtype`` view of the data area: copied by numpy in one
        step with ``copy``, else handed out as the view itself (valid until the
        position after it is committed: the kernel reuses that space). A record that
        wraps the single-mapped ring, or a shorter run (zero-filled), is always a copy.
        """
        item = dtype.itemsize
        segs, start, end = self.spans(limit)
        data = self.data
        parts: list[np.ndarray[Any, Any]] = []
        n = 0
        for kind, _s, _e, off, cnt, stride, raw, payload in segs:
            n += cnt
            first = off + RAW_OFF
            if kind == RUN and raw >= item:
                # a slice of its own (not an export of self.data): an array kept past
                # the lease never blocks release() of the ring's views
                window = data[first : first + (cnt - 1) * stride + item]
                src = np.ndarray((cnt,), dtype=dtype, buffer=window, strides=(stride,))
                parts.append(src.copy() if copy else src)
                del src, window
                continue
            rows = np.zeros(cnt, dtype=dtype)
            flat = rows.view(np.uint8).reshape(cnt, item)
            m = min(raw, item)
            for j in range(cnt):
                at = first + j * stride
                body = payload if kind == BYTES else data[at : at + m]
                flat[j, :m] = np.frombuffer(body or b"", np.uint8, m)
            parts.append(rows)
        return parts, start, end, n
