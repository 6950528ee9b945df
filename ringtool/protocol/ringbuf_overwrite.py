"""Reading a RINGBUF created with ``BPF_F_RB_OVERWRITE`` (plain buffers, no syscalls).

The kernel's rules (kernel/bpf/ringbuf.c, Linux 6.19+; checked against the BTF of
Debian's 7.2.13 kernel and the selftests progs/test_ringbuf_overwrite.c and
prog_tests/ringbuf.c ``ringbuf_overwrite_mode_subtest``):

* ``ringbuf_map_alloc`` accepts ``BPF_F_RB_OVERWRITE`` (``1U << 19``) for
  BPF_MAP_TYPE_RINGBUF only; an older kernel's flag mask refuses it with EINVAL.
* ``struct bpf_ringbuf``'s producer page holds ``producer_pos`` (offset 0),
  ``pending_pos`` (8) and ``overwrite_pos`` (16); ``overwrite_pos`` is the record
  boundary just after the last record the producer overwrote. The BPF side reads it
  with ``bpf_ringbuf_query(&rb, BPF_RB_OVERWRITE_POS)`` (``= 4``).
* ``__bpf_ringbuf_reserve`` (via ``bpf_ringbuf_has_space``) ignores ``consumer_pos``
  in overwrite mode; it fails only when the new record and the oldest *uncommitted*
  one (``pending_pos``) would span more than the ring, so a BUSY record is never
  overwritten. Otherwise it walks ``overwrite_pos`` forward over whole committed
  records (their header lengths) until the new record fits, ``WRITE_ONCE``\\s it, writes
  the new BUSY header and only then ``smp_store_release``\\s ``producer_pos``; the BPF
  program writes the payload after that, and the commit clears BUSY.
* ``ringbuf_avail_data_sz`` (poll readiness, ``BPF_RB_AVAIL_DATA``) is
  ``producer_pos - max(consumer_pos, overwrite_pos)``; ``bpf_ringbuf_commit`` still
  wakes the reader when the record lands at ``consumer_pos``; ``ringbuf_map_mmap_kern``
  is unchanged, so the consumer page stays writable and storing ``consumer_pos`` only
  steers wake-ups and readiness (the producer never waits for it).

The rules this reader relies on, derived from those:

1. **Where to read**: from ``max(own position, overwrite_pos)``, with ``overwrite_pos``
   loaded *after* ``producer_pos`` (the kernel's comment in ``__bpf_ringbuf_reserve``:
   the release of ``producer_pos`` orders the ``overwrite_pos`` store before it).
2. **A record is intact** if ``overwrite_pos`` loaded *after* reading it is ``<=`` its
   start: any write into its bytes comes from a reservation that first moved
   ``overwrite_pos`` past it (and on x86-64 TSO a later load sees that earlier store
   once it saw the write).
3. **A header is genuine** (so the record chain walked through it is) if it is not BUSY
   and ``producer_pos`` loaded after reading it is ``<= its position + size``: a newer
   lap's header is BUSY until its commit, and every other write there comes after a
   ``producer_pos`` release past it.

So every record is copied (or leased) and then checked with rule 2: one that fails is
never delivered and is counted in :attr:`OverwriteRingbufRing.overwritten` -- exactly,
since its header passed rule 3. A span the producer rewrote before this reader read any
of its headers cannot be counted in records (the ring keeps no count); its bytes are
added to :attr:`OverwriteRingbufRing.uncounted_bytes`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.errors import CorruptRecordError
from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, LEN_MASK, RingbufRing

#: index of ``overwrite_pos`` in the producer page as u64 words (after producer_pos,
#: pending_pos)
OVERWRITE_POS_WORD = 2

Run = tuple[int, int, int, int, int]  # (pos, offset, stride, count, header): see runs()


@dataclass(slots=True)
class Walk:
    """One verified walk: records from ``start`` up to ``end``. ``starts``/``ends`` are
    the positions of the non-discarded records (in order)."""

    start: int
    end: int
    runs: list[Run] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)


class OverwriteRingbufRing(RingbufRing):
    """:class:`RingbufRing` over a ring whose producer overwrites (see the module doc).

    ``producer_page`` must hold at least 24 bytes (``overwrite_pos`` at 16). The reading
    methods keep :class:`RingbufRing`'s signatures; what differs:

    * :meth:`drain` hands the callback a view of a *copy* checked by rule 2;
    * :meth:`copy_pending` and :meth:`batch` with ``copy`` return only checked copies;
    * :meth:`views` and :meth:`batch` without ``copy`` hand out views; whether they are
      still intact is :meth:`overwritten_since` (ask after reading them);
    * records (and spans) found overwritten are committed at once and counted.
    """

    def __init__(self, consumer_page: Any, producer_page: Any, data: Any, size: int, **kw: Any):
        super().__init__(consumer_page, producer_page, data, size, **kw)
        if len(self._prod) <= OVERWRITE_POS_WORD:
            raise ValueError("producer page view must hold overwrite_pos (24 bytes)")
        #: records skipped because the producer overwrote them (each header was seen)
        self.overwritten = 0
        #: bytes of spans rewritten before any of their headers could be read
        self.uncounted_bytes = 0
        #: all the ring bytes skipped as overwritten (counted records and spans)
        self.skipped_bytes = 0
        self._handout: tuple[int, list[int], list[int]] | None = None  # start, starts, ends
        self._seen: tuple[list[int], list[int]] = ([], [])  # the last walk's records

    @property
    def overwrite_pos(self) -> int:
        # READ_ONCE pairing: the producer's WRITE_ONCE(rb->overwrite_pos) in
        # __bpf_ringbuf_reserve, ordered before its smp_store_release(&rb->producer_pos)
        return int(self._prod[OVERWRITE_POS_WORD])

    @property
    def avail_data_size(self) -> int:
        prod = self.producer_pos  # acquire: pairs with smp_store_release(producer_pos)
        return prod - max(self.consumer_pos, self.overwrite_pos)

    # --- walking -----------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Rule 1: move past what the producer reclaimed since we last looked."""
        own = self._own.pos
        if self.producer_pos <= own:  # acquire: pairs with smp_store_release(producer_pos)
            return
        over = self.overwrite_pos  # loaded after producer_pos (rule 1)
        if over <= own:
            return
        # records this reader walked before (genuine headers, rule 3) are counted from
        # memory: the producer has rewritten their headers by now
        starts, ends = self._seen
        seen_end = own
        j = bisect_left(starts, own)
        if j < len(starts) and starts[j] == own:
            k = bisect_left(starts, over)
            if k > j:
                self.overwritten += k - j
                seen_end = ends[k - 1]
        n = self._count_span(seen_end, over) if seen_end < over else 0
        if n is None:
            self.uncounted_bytes += over - seen_end
        else:
            self.overwritten += n
        self.skipped_bytes += over - own
        self.commit(over)  # release: pairs with smp_load_acquire(&rb->consumer_pos)

    def _count_span(self, start: int, end: int) -> int | None:
        """Records in ``[start, end)`` from their headers, or None if any of them may
        have been rewritten (rule 3) or the chain does not land on ``end``."""
        hdrs, mask, n, pos = self._hdr, self.mask, 0, start
        while pos < end:
            hdr = int(hdrs[(pos & mask) >> 2])  # acquire: pairs with the commit's xchg
            if hdr & BUSY_BIT or hdr & LEN_MASK > self.max_len:
                return None
            pos += ((hdr & LEN_MASK) + 15) & ~7
            n += 0 if hdr & DISCARD_BIT else 1
        # rule 3 for the oldest header (acquire: pairs with smp_store_release(producer_pos))
        if pos != end or self.producer_pos > start + self.size:
            return None
        return n

    def walk(self, limit: int) -> tuple[Walk, CorruptRecordError | None]:
        """Up to ``limit`` records whose headers are genuine (rule 3), from
        ``max(own, overwrite_pos)``; a corrupt header that is genuine is returned as
        the error that ends the walk."""
        while True:
            self.check_shared()
            self._catch_up()
            cons = self._own.pos
            prod = self.producer_pos  # again: overwrite_pos may be newer than prod was
            self.check_position(cons, prod)
            w = Walk(cons, cons)
            err: CorruptRecordError | None = None
            try:
                for run in self.runs(cons, prod, limit):
                    w.runs.append(run)
                    pos, _off, stride, count, hdr = run
                    w.end = pos + count * stride
                    if not hdr & DISCARD_BIT:
                        w.starts += range(pos, w.end, stride)
                        w.ends += range(pos + stride, w.end + stride, stride)
            except CorruptRecordError as exc:
                err = exc
            # rule 3 for the first header (the chain's root); acquire as above
            if self.producer_pos <= cons + self.size:
                self._seen = (w.starts, w.ends)
                return w, err
            # lapped by a whole ring during the walk: the next round counts the span

    def _settle(self, w: Walk, over: int) -> int:
        """Rule 2 after reading: how many of the walk's records (a prefix) were
        overwritten; they are counted and committed."""
        k = bisect_left(w.starts, over)
        if k:
            self.overwritten += k
            self.skipped_bytes += w.ends[k - 1] - w.start
            self.advance(w.ends[k - 1])  # release: pairs with the producer's acquire
        return k

    @staticmethod
    def _raise_first(w: Walk, err: CorruptRecordError | None) -> None:
        if err is not None and not w.starts:
            raise err

    # --- the reading styles ------------------------------------------------------------

    def drain(self, deliver: Callable[[memoryview], Any], limit: int) -> tuple[int, int]:
        """As :meth:`RingbufRing.drain`, with each payload copied and checked before the
        callback sees it (the view is of the copy)."""
        w, err = self.walk(limit)
        if err is not None and not w.starts:
            self.advance(err.position)  # discarded records before it are consumed
            raise err
        copies = [self.payload(off, hdr & LEN_MASK) for off, hdr in _recs(w)]
        k = self._settle(w, self.overwrite_pos)  # rule 2: loaded after the copies
        cons = w.ends[k - 1] if k else w.start
        n = 0
        try:
            for i in range(k, len(copies)):
                cons = w.ends[i]  # consumed even if the callback raises
                n += 1
                ret = deliver(memoryview(copies[i]))
                if ret is not None and ret < 0:
                    return n, int(ret)
            cons = w.end
            return n, 0
        finally:
            self.advance(cons)

    def payload(self, off: int, length: int) -> bytes:
        """A copy of the payload of the record at data offset ``off`` (not yet checked)."""
        return bytes(self.data[off + 8 : off + 8 + length])

    def copy_pending(self, source: Any, base: int, limit: int) -> tuple[list[bytes], int, int]:
        """As :meth:`RingbufRing.copy_pending`, keeping only checked copies (the
        overwritten ones before them are committed and counted)."""
        w, err = self.walk(limit)
        self._raise_first(w, err)
        # bytes() of the mmap's slice is that slice itself (no second copy); of a view
        # (hand-built rings) a copy, as it must be before the check
        out = [
            bytes(source[base + off + 8 : base + off + 8 + (hdr & LEN_MASK)])
            for off, hdr in _recs(w)
        ]
        k = self._settle(w, self.overwrite_pos)  # rule 2: loaded after the copies
        start = w.ends[k - 1] if k else w.start
        self._handout = (start, w.starts[k:], w.ends[k:])
        return out[k:], start, w.end

    def views(self, limit: int) -> tuple[list[memoryview], int]:
        """As :meth:`RingbufRing.views`; records already overwritten are dropped. A view
        is valid only if :meth:`overwritten_since` says so *after* it was read."""
        w, err = self.walk(limit)
        self._raise_first(w, err)
        k = self._settle(w, self.overwrite_pos)
        data = self.data
        out = [data[off + 8 : off + 8 + (hdr & LEN_MASK)] for off, hdr in _recs(w)[k:]]
        self._handout = (w.ends[k - 1] if k else w.start, w.starts[k:], w.ends[k:])
        return out, w.end

    def overwritten_since(self, start: int, n: int) -> int:
        """How many of the first ``n`` records handed out from ``start`` the producer has
        overwritten by now (rule 2; a prefix). 0 for another hand-out."""
        h = self._handout
        if h is None or h[0] != start or n <= 0:
            return 0
        return bisect_left(h[1], self.overwrite_pos, 0, min(n, len(h[1])))

    def count_overwritten(self, n: int) -> None:
        """Count the first ``n`` records of the last hand-out (a lease) as overwritten:
        found so before the release, so never delivered."""
        self.overwritten += n
        h = self._handout
        if h is not None and 0 < n <= len(h[2]):
            self.skipped_bytes += h[2][n - 1] - h[0]

    def position_after(self, start: int, n: int) -> int:
        """As :meth:`RingbufRing.position_after`, from the positions of the last
        hand-out (the headers may be gone by now)."""
        h = self._handout
        if n <= 0:
            return start
        if h is not None and h[0] == start and n <= len(h[2]):
            return h[2][n - 1]
        return super().position_after(start, n)

    def batch(
        self, dtype: np.dtype[Any], limit: int, *, copy: bool, commit: bool
    ) -> tuple[list[np.ndarray[Any, Any]], int, int]:
        """As :meth:`RingbufRing.batch`: with ``copy`` only checked rows are returned;
        without it, views whose validity is :meth:`overwritten_since`."""
        w, err = self.walk(limit)
        self._raise_first(w, err)
        k = 0 if copy else self._settle(w, self.overwrite_pos)
        parts = [
            self.run_array(off, stride, count, hdr & LEN_MASK, dtype, copy)
            for _pos, off, stride, count, hdr in w.runs
            if not hdr & DISCARD_BIT
        ]
        if copy:
            k = self._settle(w, self.overwrite_pos)  # rule 2: loaded after the copies
        parts = _drop_rows(parts, k)
        self._handout = (w.ends[k - 1] if k else w.start, w.starts[k:], w.ends[k:])
        if commit:
            self.advance(w.end)
        return parts, w.end, len(w.starts) - k


def _recs(w: Walk) -> list[tuple[int, int]]:
    """(data offset, header) of each non-discarded record of a walk, in order."""
    out: list[tuple[int, int]] = []
    for _pos, off, stride, count, hdr in w.runs:
        if not hdr & DISCARD_BIT:
            out += [(o, hdr) for o in range(off, off + count * stride, stride)]
    return out


def _drop_rows(parts: list[np.ndarray[Any, Any]], k: int) -> list[np.ndarray[Any, Any]]:
    """``parts`` without their first ``k`` rows (over all arrays, in order)."""
    out: list[np.ndarray[Any, Any]] = []
    for arr in parts:
        if k >= len(arr):
            k -= len(arr)
            continue
        out.append(arr[k:] if k else arr)
        k = 0
    return out


__all__ = [
    "OverwriteRingbufRing",
    "Walk",
]
