"""BPF_MAP_TYPE_RINGBUF consumer protocol over plain buffers (no syscalls).

Layout (kernel/bpf/ringbuf.c, include/uapi/linux/bpf.h, Documentation/bpf/ringbuf.rst):

* consumer page: ``u64 consumer_pos`` at offset 0, written only by the consumer;
* producer page: ``u64 producer_pos`` at offset 0, written only by producers;
* data: ``size`` bytes (a power of two of pages) mapped twice back to back, so a
  record that wraps the end is contiguous in the mapping;
* record: 8-byte header ``u32 len`` (bit 31 BUSY, bit 30 DISCARD, low 30 bits the
  payload length) + ``u32 pg_off`` (kernel use), then the payload, padded to 8.

Positions are free-running u64 byte counts; ``pos & (size - 1)`` is the offset.

Whose position: ``consumer_pos`` is writable by every process that maps the ring, so
:class:`RingbufRing` walks only from its own private position and treats a shared value
it did not store as another writer's (:mod:`ringtool.protocol.own_position`:
:class:`ConsumerPositionError`, counted in :attr:`RingbufRing.scribbles`, never a place to
read records from). Zero-length records a BPF program really submits are data.

Memory ordering (kernel/bpf/ringbuf.c; libbpf's consumer, tools/lib/bpf/ringbuf.c):

1. ``producer_pos`` is read with acquire semantics — pairs with the
   ``smp_store_release(&rb->producer_pos)`` in ``__bpf_ringbuf_reserve`` — so every
   header reserved before it is visible.
2. Each header is read with acquire semantics — pairs with the ``xchg``/
   ``smp_store_release`` of the header in ``bpf_ringbuf_commit`` — so the payload
   written before the commit is visible.
3. ``consumer_pos`` is stored with release semantics — pairs with the
   ``smp_load_acquire(&rb->consumer_pos)`` in ``__bpf_ringbuf_reserve`` — so the
   producer reuses space only after we finished reading it.

How this holds here: every shared access is one aligned 4- or 8-byte load/store
through ``memoryview.cast`` (never assembled from bytes). On x86-64 (TSO) ordinary
loads are not reordered with older loads and stores are not reordered with older
loads or stores, so an aligned plain load *is* an acquire and an aligned plain store
*is* a release; CPython's eval loop adds no reordering of its own (each access is a
separate C call). An ARM64 port would need real barriers: ``ldar``/``stlr`` (or a
``dmb ish`` after the producer_pos/header loads and before the consumer_pos store),
e.g. via a tiny C helper or ``ctypes`` calls to ``__atomic_load_n``/
``__atomic_store_n`` with ACQUIRE/RELEASE; the vectorised batch path would need one
``dmb ishld`` after the header scan and before copying payloads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ringtool.errors import CorruptRecordError, RingSizeError, hexdump
from ringtool.protocol.own_position import OwnPosition

BUSY_BIT = 1 << 31  # BPF_RINGBUF_BUSY_BIT: reserved, not yet committed
DISCARD_BIT = 1 << 30  # BPF_RINGBUF_DISCARD_BIT: committed as discarded, skip
LEN_MASK = (1 << 30) - 1  # low 30 bits: payload length
HDR_SZ = 8  # BPF_RINGBUF_HDR_SZ


def record_span(length: int) -> int:
    """Bytes a record of ``length`` payload bytes occupies: header + payload, to 8."""
    return (length + HDR_SZ + 7) & ~7


class RingbufRing:
    """The three regions of one ring buffer as buffers, plus the walk over them.

    ``consumer_page`` must be writable (at least 8 bytes); ``producer_page`` at least
    8 bytes; ``data`` exactly ``2 * size`` bytes whose second half mirrors the first
    (the kernel's double mapping; tests mirror by hand). The views stay valid until
    :meth:`release`.
    """

    def __init__(
        self,
        consumer_page: Any,
        producer_page: Any,
        data: Any,
        size: int,
        *,
        index: int = 0,
    ) -> None:
        if not isinstance(size, int) or size < 8 or size & (size - 1):
            raise RingSizeError(f"ring size {size!r} is not a power of two >= 8")
        self.size = size
        self.mask = size - 1
        self.index = index
        self._cons = memoryview(consumer_page).cast("B").cast("Q")
        self._prod = memoryview(producer_page).cast("B").cast("Q")
        self.data = memoryview(data).cast("B")
        if len(self.data) < 2 * size:
            raise RingSizeError(f"data view has {len(self.data)} bytes, need 2*size={2 * size}")
        self._hdr = self.data.cast("I")  # u32 headers: aligned loads (records are 8-aligned)
        self.max_len = size - HDR_SZ
        # the private position: consumer_pos read once, then only stored (module doc)
        self._own = OwnPosition(self._cons, 0, f"ring {index}: consumer_pos")

    # --- positions ---------------------------------------------------------------------

    @property
    def consumer_pos(self) -> int:
        """This consumer's own position (private; see the module doc)."""
        return self._own.pos

    @property
    def shared_consumer_pos(self) -> int:
        """The shared ``consumer_pos`` word as it is now (someone may have changed it)."""
        return self._own.shared()

    @property
    def scribbles(self) -> int:
        """Times the shared consumer_pos held a value this consumer had not stored."""
        return self._own.scribbles

    @property
    def producer_pos(self) -> int:
        # acquire: pairs with smp_store_release(&rb->producer_pos) in the producer
        return int(self._prod[0])

    @property
    def avail_data_size(self) -> int:
        return self.producer_pos - self.consumer_pos

    def commit(self, pos: int) -> None:
        """Release-store the consumer position — pairs with smp_load_acquire(
        &rb->consumer_pos) in __bpf_ringbuf_reserve."""
        self._own.store(pos)  # release: pairs with smp_load_acquire(&rb->consumer_pos)

    def advance(self, pos: int) -> None:
        """Commit ``pos`` if it is ahead of the consumer position (never move back:
        the producer may already have reused the space behind it)."""
        if pos > self._own.pos:
            self.commit(pos)  # release: pairs with the producer's acquire

    def take_over(self) -> None:
        """Adopt the shared ``consumer_pos`` as this consumer's own position: for a
        deliberate hand-over, when another consumer of the same map read before us
        (one after the other, never at once). The next walk starts there (still
        checked: 8-aligned, within one ring of the producer)."""
        self._own.take_over()

    def check_shared(self) -> None:
        """Raise :class:`~ringtool.errors.ConsumerPositionError` (counted, our position
        stored back — a release store that pairs with smp_load_acquire(
        &rb->consumer_pos) in __bpf_ringbuf_reserve) if the shared ``consumer_pos`` is
        not the value this consumer stored last."""
        self._own.check()

    # --- validation --------------------------------------------------------------------

    def corrupt(self, why: str, pos: int) -> CorruptRecordError:
        off = pos & self.mask
        start = max(0, off - 32) & ~15
        end = min(2 * self.size, off + 64)
        dump = hexdump(self.data[start:end], base=start, mark=off - start)
        return CorruptRecordError(f"ring {self.index}: {why}", position=pos, dump=dump)

    def check_position(self, cons: int, prod: int) -> None:
        if cons & 7:
            raise self.corrupt("consumer position is not 8-byte aligned", cons)
        if prod < cons or prod - cons > self.size:
            raise self.corrupt(
                f"producer position {prod:#x} is not within one ring of the consumer", cons
            )

    # --- record walks ------------------------------------------------------------------

    def runs(self, cons: int, prod: int, limit: int) -> Iterator[tuple[int, int, int, int, int]]:
        """Split ``[cons, prod)`` into runs of records that share one header value.

        Yields ``(pos, offset, stride, count, header)``: ``count`` consecutive records
        starting at position ``pos`` (data offset ``offset``), each ``stride`` bytes,
        all with header word ``header`` (so the same length, and all discarded or
        none). At most ``limit`` non-discarded records in total. Stops before a BUSY
        record. Raises :class:`CorruptRecordError` for an impossible length.

        A run longer than two records is confirmed by one vectorised numpy compare of
        the strided header words (aligned u32 loads in address order: each an acquire
        on TSO, see the module doc) before any payload of the run is read.
        """
        hdrs, mask, max_len, buf = self._hdr, self.mask, self.max_len, self.data
        left = limit
        while cons < prod and left > 0:
            off = cons & mask
            hdr = hdrs[off >> 2]  # acquire: pairs with the commit's header store
            if hdr & BUSY_BIT:
                return
            length = hdr & LEN_MASK
            stride = (length + 15) & ~7
            if length > max_len or cons + stride > prod:
                raise self.corrupt(f"record length {length} overruns the ring", cons)
            k = (prod - cons) // stride
            if not hdr & DISCARD_BIT and k > left:
                k = left
            count = 1
            if k > 2 and hdrs[((off + stride) & mask) >> 2] == hdr:
                heads = np.ndarray((k,), dtype="<u4", buffer=buf, offset=off, strides=(stride,))
                bad = np.flatnonzero(heads != hdr)
                del heads  # drop the export of the shared view
                count = int(bad[0]) if len(bad) else k
            yield cons, off, stride, count, hdr
            if not hdr & DISCARD_BIT:
                left -= count
            cons += count * stride

    def _snapshot(self) -> tuple[int, int]:
        self.check_shared()
        cons = self._own.pos  # private: never the shared word (see module doc)
        prod = self.producer_pos  # acquire (see module doc)
        self.check_position(cons, prod)
        return cons, prod

    def drain(self, deliver: Callable[[memoryview], Any], limit: int) -> tuple[int, int]:
        """Hand each committed record's payload view to ``deliver``, in order.

        The view passed to ``deliver`` is released when it returns (valid only during
        the call). Stops at a BUSY record, at ``limit`` records, at the producer
        position read on entry (one snapshot: a fast producer can't keep us here), or
        when ``deliver`` returns a negative int or raises (either way that record
        counts as consumed, as in libbpf; the exception propagates).
        The consumer position is stored once, on every exit path.
        Returns ``(records delivered, stop value or 0)``.
        """
        cons, prod = self._snapshot()
        data = self.data
        n = 0
        try:
            for pos, off, stride, count, hdr in self.runs(cons, prod, limit):
                cons = pos
                if hdr & DISCARD_BIT:
                    cons = pos + count * stride
                    continue
                length = hdr & LEN_MASK
                start = off + 8
                for o in range(start, start + count * stride, stride):
                    view = data[o : o + length]
                    cons += stride  # delivered: consumed even if the callback raises
                    n += 1
                    try:
                        ret = deliver(view)
                    finally:
                        try:
                            view.release()
                        except BufferError:  # the callback exported it (e.g. numpy)
                            pass
                    if ret is not None and ret < 0:
                        return n, int(ret)
            return n, 0
        finally:
            self.commit(cons)

    def _gather(
        self, limit: int, take: Callable[[int, int, int, int], object]
    ) -> tuple[int, int, int]:
        """The walk of :meth:`copy_pending`, :meth:`views` and :meth:`batch`: from our
        position, ``take(offset, stride, count, length)`` per run of non-discarded records
        (:meth:`runs`); commits nothing. Returns ``(start, end, records)``. A BUSY record
        ends the walk; so does a corrupt one after good ones (raised when it is the first)."""
        cons, prod = self._snapshot()
        start, n = cons, 0
        try:
            for pos, off, stride, count, hdr in self.runs(cons, prod, limit):
                cons = pos + count * stride
                if not hdr & DISCARD_BIT:
                    take(off, stride, count, hdr & LEN_MASK)
                    n += count
        except CorruptRecordError:
            if not n:
                raise
        return start, cons, n

    def _payloads(self, source: Any, base: int, limit: int) -> tuple[list[Any], int, int]:
        """``source[base + offset : ...]`` of each payload :meth:`_gather` walks."""
        out: list[Any] = []

        def take(off: int, stride: int, count: int, length: int) -> None:
            at = range(base + off + 8, base + off + 8 + count * stride, stride)
            out.extend([source[o : o + length] for o in at])

        start, end, _n = self._gather(limit, take)
        return out, start, end

    def copy_pending(self, source: Any, base: int, limit: int) -> tuple[list[bytes], int, int]:
        """Copy up to ``limit`` records' payloads out as ``bytes``; commit nothing.

        Returns ``(payloads, start, end)``: the consumer position they were read from
        and the position after the last one. The caller commits ``end`` once it has
        delivered them all (:meth:`advance`), or :meth:`position_after` what it did
        deliver. A corrupt record after good ones ends the batch early (it is raised
        when it is the first record); ``source[base + offset : ...]`` must read the
        data region (the mmap object itself: slicing it makes one bytes object with
        no intermediate view).
        """
        return self._payloads(source, base, limit)

    def copy_out(self, source: Any, base: int, limit: int) -> list[bytes]:
        """:meth:`copy_pending`, then commit the position after the copies."""
        try:
            out, _start, end = self.copy_pending(source, base, limit)
        except CorruptRecordError as exc:
            self.advance(exc.position)  # discarded records before it are consumed
            raise
        self.advance(end)
        return out

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` records delivered from ``start``
        (discarded ones are skipped). Re-walks headers that are still uncommitted, so
        the producer cannot have changed them."""
        cons = start
        if n <= 0:
            return cons
        for pos, _off, stride, count, _hdr in self.runs(start, self.producer_pos, n):
            cons = pos + count * stride
        return cons

    def views(self, limit: int) -> tuple[list[memoryview], int]:
        """Views of up to ``limit`` records' payloads and the position after them.

        Nothing is committed: the caller commits the returned position once it is done
        with the views (the producer may overwrite them after that), or
        :meth:`position_after` the ones it consumed."""
        out, _start, end = self._payloads(self.data, 0, limit)
        return out, end

    def decode_batch(self, dtype: np.dtype[Any], limit: int) -> np.ndarray[Any, Any]:
        """Decode up to ``limit`` records as ``dtype`` and commit once (see
        :meth:`batch`; the array is the caller's own)."""
        parts, _, _ = self.batch(dtype, limit, copy=True, commit=True)
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def batch(
        self, dtype: np.dtype[Any], limit: int, *, copy: bool, commit: bool
    ) -> tuple[list[np.ndarray[Any, Any]], int, int]:
        """Up to ``limit`` records as ``dtype`` arrays, one per run; returns
        ``(arrays, position after them, records)``.

        A run of records of exactly ``dtype.itemsize`` bytes is one strided ``dtype``
        view of the ring (a run that wraps is contiguous in the double mapping): copied
        by numpy in one step with ``copy``, else handed out as the view itself (valid
        until the position after it is committed: the producer reuses that space).
        Other records are always copies: a longer one decoded from its first
        ``itemsize`` bytes, a shorter one zero-filled. Discarded records are skipped; a
        BUSY one ends the batch, and so does a corrupt one after good ones (raised when
        it is the first). With ``commit`` the position is stored once, on every exit.
        """
        parts: list[np.ndarray[Any, Any]] = []

        def take(off: int, stride: int, count: int, length: int) -> None:
            parts.append(self.run_array(off, stride, count, length, dtype, copy))

        try:
            _start, end, n = self._gather(limit, take)
        except CorruptRecordError as exc:
            if commit:  # discarded records before it are consumed
                self.advance(exc.position)
            raise
        if commit:
            self.advance(end)
        return parts, end, n

    def run_array(
        self, off: int, stride: int, count: int, length: int, dtype: np.dtype[Any], copy: bool
    ) -> np.ndarray[Any, Any]:
        """A run of ``count`` records (:meth:`runs`) as one ``dtype`` array, as
        :meth:`batch` describes."""
        item = dtype.itemsize
        buf = self.data
        if length == item:
            # a slice of its own (not an export of self.data): an array kept
            # past the lease never blocks release() of the ring's views
            window = buf[off + 8 : off + 8 + (count - 1) * stride + item]
            src = np.ndarray((count,), dtype=dtype, buffer=window, strides=(stride,))
            out = src.copy() if copy else src
            del src, window
            return out
        rows = np.zeros(count, dtype=dtype)
        raw = rows.view(np.uint8).reshape(count, item)
        k = min(length, item)
        src_bytes = np.ndarray(
            (count, k), dtype=np.uint8, buffer=buf, offset=off + 8, strides=(stride, 1)
        )
        raw[:, :k] = src_bytes
        del src_bytes
        return rows

    def overwritten_since(self, start: int, n: int) -> int:
        """Records handed out that the producer overwrote: none (it waits for us)."""
        return 0

    def count_overwritten(self, n: int) -> None:
        """Count leased records found overwritten: never any here."""

    def release(self) -> None:
        """Drop the views (required before the underlying mmap can be closed)."""
        for v in (self._hdr, self._cons, self._prod, self.data):
            v.release()
