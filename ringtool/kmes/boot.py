"""The boot buffer (docs/kmes.md section 9): events before the capacity is known.

A small private per-CPU buffer with the same circular overwrite semantics as a ring
buffer (oldest events overwritten when full, events over 50% of its capacity dropped
with their seq consumed). It is never shared or mapped. :meth:`BootBuffer.flush_into`
copies the surviving events, seq and timestamp kept, into the real buffer's writer.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from ringtool.kmes import layout as L
from ringtool.kmes.writer import Writer

#: Compiled-in boot buffer size per CPU (docs/kmes.md section 9).
BOOT_CAPACITY = 1 << 16


@dataclass(slots=True)
class BootStats:
    written: int = 0
    dropped: int = 0  # too large for the boot buffer, or for the real buffer at flush
    overwritten: int = 0


class BootBuffer:
    """Boot buffer of ``capacity`` bytes for ``cpu``; seq numbers start at 1 here."""

    def __init__(self, cpu: int, capacity: int = BOOT_CAPACITY) -> None:
        self.cpu = cpu
        self.capacity = capacity
        self._events: deque[bytes] = deque()
        self._bytes = 0
        self.last_seq = 0
        self.stats = BootStats()

    def __len__(self) -> int:
        return len(self._events)

    def write(
        self,
        event_type: int,
        payload: bytes | bytearray | memoryview,
        origin_class: int = L.ORIGIN_BRIDGE,
        timestamp: int | None = None,
    ) -> int:
        """Buffer one event (header built now, CLOCK_REALTIME); return its seq."""
        self.last_seq += 1
        size = L.event_size(len(payload))
        if size > L.max_event_size(self.capacity):
            self.stats.dropped += 1
            return self.last_seq
        while self._bytes + size > self.capacity:
            self._bytes -= len(self._events.popleft())
            self.stats.overwritten += 1
        buf = bytearray(size)
        L.pack_event(
            buf,
            0,
            event_type=event_type,
            origin_class=origin_class,
            timestamp=time.time_ns() if timestamp is None else timestamp,
            seq=self.last_seq,
            cpu_id=self.cpu,
            payload=payload,
        )
        self._events.append(bytes(buf))
        self._bytes += size
        self.stats.written += 1
        return self.last_seq

    def flush_into(self, writer: Writer) -> int:
        """Copy the surviving events into ``writer`` (then publish); empty this buffer.

        The writer must be new (its seq continues from :attr:`last_seq`: build it with
        ``Writer(buf, next_seq=boot.last_seq + 1)``). Returns the number copied.
        """
        copied = 0
        for raw in self._events:
            try:
                writer.write_raw(raw)
                copied += 1
            except ValueError:  # larger than 50% of the real buffer: dropped
                self.stats.dropped += 1
        self._events.clear()
        self._bytes = 0
        writer.publish()
        return copied
