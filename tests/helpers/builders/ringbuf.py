"""A hand-built BPF ring buffer in bytearrays that plays the kernel producer.

It follows kernel/bpf/ringbuf.c: reserve writes a BUSY header and advances
producer_pos (refusing when the ring lacks space, like __bpf_ringbuf_reserve),
commit/discard rewrite the header. The data area is 2*size bytes and every write
lands in both halves, as the kernel's double mapping makes it appear.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Any

from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, RingbufRing, record_span
from ringtool.readers.consumer import MultiRingConsumer
from ringtool.readers.ringbuf_reader_ring import RingbufReaderRing


class HandRing:
    def __init__(self, size: int = 4096, *, start_pos: int = 0) -> None:
        self.size = size
        self.mask = size - 1
        self.cons_page = bytearray(4096)
        self.prod_page = bytearray(4096)
        self.data = bytearray(2 * size)
        struct.pack_into("<Q", self.cons_page, 0, start_pos)
        struct.pack_into("<Q", self.prod_page, 0, start_pos)
        self.state = RingbufRing(self.cons_page, self.prod_page, self.data, size)

    def attach(self) -> RingbufRing:
        """A new consumer of this ring (it starts from the shared consumer_pos as it
        is now); also becomes :attr:`state`."""
        self.state = RingbufRing(self.cons_page, self.prod_page, self.data, self.size)
        return self.state

    def scribble(self, pos: int) -> None:
        """Another writer stores ``pos`` into the shared consumer_pos."""
        struct.pack_into("<Q", self.cons_page, 0, pos)

    @property
    def producer_pos(self) -> int:
        return int(struct.unpack_from("<Q", self.prod_page, 0)[0])

    @property
    def consumer_pos(self) -> int:
        return int(struct.unpack_from("<Q", self.cons_page, 0)[0])

    def write(self, pos: int, raw: bytes) -> None:
        """Write ``raw`` at ring position ``pos`` through the double mapping."""
        for i, b in enumerate(raw):
            off = (pos + i) & self.mask
            self.data[off] = b
            self.data[off + self.size] = b

    def reserve(self, payload: bytes) -> int | None:
        """Reserve a BUSY record holding ``payload``; None when it doesn't fit."""
        span = record_span(len(payload))
        prod = self.producer_pos
        if prod + span - self.consumer_pos > self.mask:  # as __bpf_ringbuf_reserve
            return None
        self.write(prod, struct.pack("<II", len(payload) | BUSY_BIT, 0) + payload)
        struct.pack_into("<Q", self.prod_page, 0, prod + span)
        return prod

    def commit(self, pos: int, *, discard: bool = False) -> None:
        (hdr,) = struct.unpack("<I", self.read(pos, 4))
        length = hdr & ~(BUSY_BIT | DISCARD_BIT)
        self.write(pos, struct.pack("<I", length | (DISCARD_BIT if discard else 0)))

    def output(self, payload: bytes) -> bool:
        pos = self.reserve(payload)
        if pos is None:
            return False
        self.commit(pos)
        return True

    def read(self, pos: int, n: int) -> bytes:
        off = pos & self.mask
        return bytes(self.data[off : off + n])

    def set_header(self, pos: int, value: int) -> None:
        self.write(pos, struct.pack("<I", value))


class HandConsumer(MultiRingConsumer):
    """The consumer base class over hand-built rings (eventfds stand in for map fds)."""

    def __init__(self, rings: list[HandRing], callback: Callable[[memoryview], Any]) -> None:
        super().__init__(what="HandConsumer")
        self.efds: list[int] = []
        for i, r in enumerate(rings):
            fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self.efds.append(fd)
            self._add_ring(RingbufReaderRing(r.state, r.state.data, 0, fd, callback, i))

    def close(self) -> None:
        super().close()
        while self.efds:
            os.close(self.efds.pop())
