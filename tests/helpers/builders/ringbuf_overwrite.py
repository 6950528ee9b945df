"""A hand-built RINGBUF in overwrite mode that plays the kernel producer.

It follows ``__bpf_ringbuf_reserve`` of kernel/bpf/ringbuf.c with
``BPF_F_RB_OVERWRITE``: space is refused only when the new record and the oldest
uncommitted one (``pending_pos``) would span more than the ring; ``overwrite_pos`` then
walks forward over whole records until the new one fits and is stored before the
BUSY header and ``producer_pos``; the payload is written after (as a BPF program writes
into its reservation), and the commit clears BUSY. Producer page: producer_pos (0),
pending_pos (8), overwrite_pos (16).
"""

from __future__ import annotations

import struct

from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, LEN_MASK, record_span
from ringtool.protocol.ringbuf_overwrite import OverwriteRingbufRing
from tests.helpers.builders.ringbuf import HandRing


class OverwriteHandRing(HandRing):
    """A :class:`HandRing` whose producer overwrites; ``state`` reads it."""

    def __init__(self, size: int = 4096, *, start_pos: int = 0) -> None:
        super().__init__(size, start_pos=start_pos)
        struct.pack_into("<QQ", self.prod_page, 8, start_pos, start_pos)
        self.state = self.attach()

    def attach(self) -> OverwriteRingbufRing:
        self.state = OverwriteRingbufRing(self.cons_page, self.prod_page, self.data, self.size)
        return self.state

    def _word(self, i: int) -> int:
        return int(struct.unpack_from("<Q", self.prod_page, 8 * i)[0])

    @property
    def overwrite_pos(self) -> int:
        return self._word(2)

    def _hdr_at(self, pos: int) -> int:
        return int(struct.unpack("<I", self.read(pos, 4))[0])

    def reserve_header(self, length: int) -> int | None:
        """Reserve a record of ``length`` payload bytes: BUSY header written, positions
        published, payload not yet written. Its position, or None (no space)."""
        span = record_span(length)
        prod = self.producer_pos
        new_prod = prod + span
        pend = self._word(1)
        while pend < prod:  # as the kernel: pending_pos moves over committed records
            hdr = self._hdr_at(pend)
            if hdr & BUSY_BIT:
                break
            pend += record_span(hdr & LEN_MASK)
        struct.pack_into("<Q", self.prod_page, 8, pend)
        if new_prod - pend > self.mask:  # bpf_ringbuf_has_space in overwrite mode
            return None
        over = self.overwrite_pos
        while new_prod - over > self.mask:  # whole records, by their header lengths
            over += record_span(self._hdr_at(over) & ~DISCARD_BIT & LEN_MASK)
        struct.pack_into("<Q", self.prod_page, 16, over)  # WRITE_ONCE(overwrite_pos)
        self.write(prod, struct.pack("<II", length | BUSY_BIT, 0))
        struct.pack_into("<Q", self.prod_page, 0, new_prod)  # smp_store_release
        return prod

    def reserve(self, payload: bytes) -> int | None:
        pos = self.reserve_header(len(payload))
        if pos is not None:
            self.write(pos + 8, payload)
        return pos
