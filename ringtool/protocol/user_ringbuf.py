"""BPF_MAP_TYPE_USER_RINGBUF producer protocol over plain buffers (no syscalls).

The map is a RINGBUF turned around (kernel/bpf/ringbuf.c, Linux 6.1): user space
produces, a BPF program consumes with ``bpf_user_ringbuf_drain()``. Same layout as
:mod:`ringtool.protocol.ringbuf` (``consumer_pos`` page, ``producer_pos`` page, data
of ``size`` bytes mapped twice, 8-byte record headers, records padded to 8), other
owners: ``ringbuf_map_mmap_user`` maps the consumer page read-only (only the kernel
moves ``consumer_pos``) and the producer page plus the data read-write (only the
producer writes them).

A record's life (libbpf's ``user_ring_buffer__reserve``/``submit``/``discard``,
tools/lib/bpf/ringbuf.c, is the reference producer):

1. reserve: the header is written ``len | BUSY_BIT`` (pad word: the producer's
   ``owner`` tag, e.g. its pid; the kernel ignores it) at
   ``producer_pos & (size - 1)``, then ``producer_pos`` advances by
   :func:`~ringtool.protocol.ringbuf.record_span` ``(len)``;
2. the payload is written at ``producer_pos + 8`` (contiguous thanks to the double
   mapping);
3. submit clears BUSY_BIT, discard clears it and sets DISCARD_BIT: one aligned 4-byte
   store of the header.

The kernel's ``__bpf_user_ringbuf_peek`` reads records from ``consumer_pos`` in order
and stops at a BUSY one (a later record submitted first waits for it); a DISCARD one is
skipped; and it refuses a malformed one: ``producer_pos`` not a multiple of 8, or a
header whose span exceeds ``producer_pos - consumer_pos`` is ``-EINVAL``, a span
larger than the ring ``-E2BIG``. ``bpf_user_ringbuf_drain`` then returns that error
*without* moving ``consumer_pos``: the ring stays stuck on that record, so a producer
must never publish one (this module cannot: lengths are checked before anything is
written).

Memory ordering, each access one aligned load/store through ``memoryview.cast`` (the
x86-64 argument of :mod:`ringtool.protocol.ringbuf` makes plain accesses acquire and
release; an ARM64 port needs real barriers):

* ``consumer_pos`` is loaded with acquire semantics: pairs with the
  ``smp_store_release(&rb->consumer_pos)`` of ``__bpf_user_ringbuf_sample_release``
  (and of the discard skip in ``__bpf_user_ringbuf_peek``), so space is reused only
  after the kernel finished reading it;
* ``producer_pos`` is stored with release semantics after the header: pairs with the
  ``smp_load_acquire(&rb->producer_pos)`` in ``__bpf_user_ringbuf_peek``;
* the header's final value is stored with release semantics after the payload: pairs
  with ``smp_load_acquire(hdr)`` in ``__bpf_user_ringbuf_peek``.

The producer keeps its own ``producer_pos`` (read once): nobody else may move it.
One producer at a time: this class is not thread-safe (the OS-level
:class:`ringtool.UserRingBuffer` serializes it).

A producer killed between reserve and submit leaves a BUSY record that nobody will
submit: the kernel's drain stops at it for good, and every record after it waits.
:meth:`UserRingProducer.write_batch` cannot leave one (each header is final before
``producer_pos`` publishes it); :meth:`UserRingProducer.discard_abandoned` lets the next
producer -- once it knows no other one is writing -- turn such records into DISCARD
ones, which ``__bpf_user_ringbuf_peek`` skips (it moves ``consumer_pos`` past a DISCARD
record before it looks at BUSY).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ringtool.errors import ProducerStateError, RecordSizeError, RingFullError
from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, HDR_SZ, LEN_MASK, record_span

#: The largest payload the kernel takes: it must fit in a bpf_dynptr
#: (``bpf_dynptr_check_size``: DYNPTR_MAX_SIZE, the low 24 bits).
DYNPTR_MAX_SIZE = (1 << 24) - 1


def max_record(size: int) -> int:
    """The largest payload of a ring of ``size`` data bytes (header included, a record
    spans at most the whole ring; and a dynptr's limit)."""
    return min(size - HDR_SZ, DYNPTR_MAX_SIZE)


class Abandoned(NamedTuple):
    """A BUSY record :meth:`UserRingProducer.discard_abandoned` discarded: its position,
    payload length and its producer's ``owner`` tag (the pad word)."""

    pos: int
    length: int
    owner: int


class UserRingProducer:
    """The producer side of one user ring over plain buffers.

    ``consumer`` and ``producer`` are the two pages (at least 8 bytes each; only
    ``producer`` is written); ``data`` is ``2 * size`` bytes whose second half mirrors
    the first (the kernel's double mapping). Positions are free-running u64 byte counts.
    ``owner`` (u32) goes into each record's pad word: who wrote it, should it be found
    abandoned (:meth:`discard_abandoned`).
    """

    def __init__(
        self,
        consumer: memoryview,
        producer: memoryview,
        data: memoryview,
        size: int,
        *,
        owner: int = 0,
    ) -> None:
        if size <= 0 or size & (size - 1) or size % 8:
            raise RecordSizeError(f"user ring size {size} is not a power of two of 8 bytes")
        if len(data) != 2 * size:
            raise RecordSizeError(f"user ring data is {len(data)} bytes, expected 2 * {size}")
        self.size = size
        self._mask = size - 1
        self._cons = consumer.cast("B")[:8].cast("Q")
        self._prod_word = producer.cast("B")[:8].cast("Q")
        self._data = data
        self._words = data.cast("I")
        self._owner = owner & 0xFFFFFFFF
        # ours alone: nobody else moves producer_pos (read once, then only stored)
        self._prod = int(self._prod_word[0])

    @property
    def producer_pos(self) -> int:
        return self._prod

    def consumer_pos(self) -> int:
        """``consumer_pos``: acquire load, pairs with the kernel's
        ``smp_store_release(&rb->consumer_pos)`` in ``__bpf_user_ringbuf_sample_release``."""
        return int(self._cons[0])

    def free_space(self) -> int:
        """Bytes a reserve may take now (headers and padding count)."""
        return self.size - (self._prod - self.consumer_pos())

    def check_length(self, length: int) -> int:
        """``length``'s span, or :class:`RecordSizeError` when the kernel would refuse it."""
        if not 0 <= length <= max_record(self.size):
            raise RecordSizeError(
                f"record of {length} bytes does not fit a user ring of {self.size} bytes "
                f"(at most {max_record(self.size)}): use a bigger ring or smaller records"
            )
        return record_span(length)

    def reserve(self, length: int) -> int:
        """Reserve ``length`` payload bytes; returns the record's position (see
        :meth:`payload`, :meth:`commit`). :class:`RingFullError` when there is no room
        now (nothing changed), :class:`RecordSizeError` when there never will be."""
        span = self.check_length(length)
        if self.free_space() < span:
            raise RingFullError(
                f"user ring full: {span} bytes asked, {self.free_space()} free; wait for "
                "the BPF side to drain (reserve_blocking)"
            )
        pos = self._prod
        w = (pos & self._mask) >> 2
        self._words[w + 1] = self._owner  # the pad word (pg_off in the kernel's records)
        self._words[w] = length | BUSY_BIT
        # release: pairs with smp_load_acquire(&rb->producer_pos) in __bpf_user_ringbuf_peek
        self._prod = pos + span
        self._prod_word[0] = self._prod
        return pos

    def payload(self, pos: int, length: int) -> memoryview:
        """The writable ``length`` bytes of the record reserved at ``pos``."""
        start = (pos & self._mask) + HDR_SZ
        return self._data[start : start + length]

    def commit(self, pos: int, *, discard: bool = False) -> None:
        """Submit (or discard) the record reserved at ``pos``: one release store of its
        header, pairs with ``smp_load_acquire(hdr)`` in ``__bpf_user_ringbuf_peek``."""
        w = (pos & self._mask) >> 2
        hdr = int(self._words[w])
        if not hdr & BUSY_BIT:
            raise ProducerStateError(f"record at {pos} is not reserved (header {hdr:#x})")
        self._words[w] = (hdr & LEN_MASK) | (DISCARD_BIT if discard else 0)

    def write_batch(self, records: Sequence[bytes | bytearray | memoryview]) -> int:
        """Write as many of ``records`` as fit now, in order, submitted; returns how
        many. Each header is written final (never BUSY) before one release store of
        ``producer_pos`` publishes them all: the kernel reads no header beyond it."""
        free = self.free_space()
        pos = self._prod
        n = 0
        for rec in records:
            length = len(rec)
            span = self.check_length(length)
            if span > free:
                break
            off = pos & self._mask
            self._data[off + HDR_SZ : off + HDR_SZ + length] = rec
            self._words[(off >> 2) + 1] = self._owner
            self._words[off >> 2] = length
            pos += span
            free -= span
            n += 1
        if n:
            # release: pairs with smp_load_acquire(&rb->producer_pos) in __bpf_user_ringbuf_peek
            self._prod = pos
            self._prod_word[0] = pos
        return n

    def discard_abandoned(self) -> list[Abandoned]:
        """Discard every BUSY record between ``consumer_pos`` and ``producer_pos``;
        returns them. Only for a caller that knows no producer is writing: this one has
        no reservation open and every other producer of the ring is gone (a lock they
        all take), so a BUSY record is one whose writer died before submitting it. Each
        header becomes ``len | DISCARD_BIT`` in one release store (the kernel then skips
        it). The walk stops at a header that cannot be a record (its span past
        ``producer_pos``): the kernel refuses the ring there (-EINVAL) and nothing after
        it can be told apart."""
        pos = self.consumer_pos()
        found: list[Abandoned] = []
        while pos < self._prod:
            w = (pos & self._mask) >> 2
            hdr = int(self._words[w])
            length = hdr & LEN_MASK
            span = record_span(length)
            if span > self._prod - pos or span > self.size:
                break
            if hdr & BUSY_BIT:
                self._words[w] = length | DISCARD_BIT
                found.append(Abandoned(pos, length, int(self._words[w + 1])))
            pos += span
        return found

    def release(self) -> None:
        """Drop the views (before the mapping goes; ``data`` included)."""
        for view in (self._words, self._cons, self._prod_word, self._data):
            view.release()


__all__ = ["DYNPTR_MAX_SIZE", "Abandoned", "UserRingProducer", "max_record"]
