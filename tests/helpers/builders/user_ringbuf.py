"""A user ring in plain memory with a model of the kernel's consumer.

The data area is a real double mapping of a memfd (:class:`ringtool.kernel.shm.DoubleMapping`),
as ``ringbuf_map_mmap_user`` gives the producer, so a record that wraps the end is
contiguous. :meth:`HandUserRing.drain` follows kernel/bpf/ringbuf.c's
``bpf_user_ringbuf_drain``: ``__bpf_user_ringbuf_peek`` checks (producer_pos aligned,
span within producer_pos - consumer_pos, span within the ring), skips DISCARD records,
stops at a BUSY one, returns the first error without moving ``consumer_pos``.
"""

from __future__ import annotations

import errno
import os
import struct

from ringtool.kernel.shm import DoubleMapping
from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, LEN_MASK, record_span
from ringtool.protocol.user_ringbuf import UserRingProducer

PAGE = 4096


class HandUserRing:
    def __init__(self, size: int = 4096, *, start_pos: int = 0) -> None:
        self.size = size
        self.cons_page = bytearray(8)
        self.prod_page = bytearray(8)
        struct.pack_into("<Q", self.cons_page, 0, start_pos)
        struct.pack_into("<Q", self.prod_page, 0, start_pos)
        head = os.memfd_create("urb-head")
        ring = os.memfd_create("urb-ring")
        os.ftruncate(head, PAGE)
        os.ftruncate(ring, size)
        try:
            self.mapping = DoubleMapping(head, ring, PAGE, size, writable_ring=True)
        finally:
            os.close(head)
            os.close(ring)
        self.producer = UserRingProducer(
            memoryview(self.cons_page), memoryview(self.prod_page), self.mapping.ring, size
        )

    def successor(self, owner: int) -> UserRingProducer:
        """Another producer over the same ring, as the next process to produce would
        map it (it reads ``producer_pos`` from the page); the caller releases it."""
        return UserRingProducer(
            memoryview(self.cons_page), memoryview(self.prod_page),
            memoryview(self.mapping.ring), self.size, owner=owner,
        )  # fmt: skip

    @property
    def consumer_pos(self) -> int:
        return int(struct.unpack_from("<Q", self.cons_page, 0)[0])

    @property
    def producer_pos(self) -> int:
        return int(struct.unpack_from("<Q", self.prod_page, 0)[0])

    def header(self, pos: int) -> int:
        return int(struct.unpack_from("<I", self.mapping.ring, pos & (self.size - 1))[0])

    def poke_header(self, pos: int, value: int) -> None:
        struct.pack_into("<I", self.mapping.ring, pos & (self.size - 1), value)

    def drain(self, limit: int = 1 << 30) -> tuple[list[bytes], int]:
        """The samples the kernel would hand its callback, and drain's return value
        (the count, or a negative errno)."""
        got: list[bytes] = []
        discarded = 0
        while len(got) + discarded < limit:
            prod = self.producer_pos
            if prod % 8:
                return got, -errno.EINVAL
            cons = self.consumer_pos
            if cons >= prod:
                break
            hdr = self.header(cons)
            length = hdr & LEN_MASK
            span = record_span(length)
            if span > prod - cons:
                return got, -errno.EINVAL
            if span > self.size:
                return got, -errno.E2BIG
            if hdr & DISCARD_BIT:
                struct.pack_into("<Q", self.cons_page, 0, cons + span)
                discarded += 1
                continue
            if hdr & BUSY_BIT:
                break
            off = (cons & (self.size - 1)) + 8
            got.append(bytes(self.mapping.ring[off : off + length]))
            struct.pack_into("<Q", self.cons_page, 0, cons + span)
        return got, len(got)

    def close(self) -> None:
        self.producer.release()
        self.mapping.close()
