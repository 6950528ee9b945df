"""The KMES writer: the write protocol (docs/kmes.md section 6) on one per-CPU buffer.

Contract:

* Exactly one thread writes through a :class:`Writer` (the per-CPU single writer of
  docs/kmes.md section 6); any number of processes may read the buffer concurrently.
* The writer never takes a value from shared memory. Its ``write_pos``, ``tail_pos``,
  ``futex_counter``, ``seq`` and generation are private copies that it only *stores*
  into the metadata page (the one page consumers can write); the only shared word it
  loads is ``need_wake`` (any non-zero byte means "wake"). The data region is sealed
  (``F_SEAL_FUTURE_WRITE``: only the writer's own mapping can write it), so the event
  sizes it reads back while advancing ``tail_pos`` are its own bytes; they are still
  validated (a bad one discards everything older than the frontier instead of walking
  garbage). So a consumer writing anything it can reach can't crash or stall the writer.
* ``seq`` is per CPU: first event 1, +1 per event, continuous across generations
  (pass ``next_seq`` to a writer that continues another); a dropped event (> 50% of
  capacity, docs/kmes.md §6.2 step 3) consumes its number.

Memory ordering (docs/kmes.md section 5). Every shared word is one aligned store through
``memoryview.cast("Q")``/``cast("I")``. On x86-64 (TSO) stores are not reordered with
other stores and loads not with other loads, and CPython performs the stores in program
order, so the release stores of that table (tail_pos before the data it frees is
overwritten, write_pos after the event data, futex_counter after write_pos) are release
stores already. The one StoreLoad pair (store write_pos, then load need_wake) gets a full fence
(:func:`ringtool.kmes.buffer.store_load_fence`). An ARM64 port must use ``stlr`` for the
three stores, ``ldar`` in the reader, and ``dmb ish`` for the fence (a small C helper).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ringtool.kernel.futex import futex_wake
from ringtool.kmes import layout as L
from ringtool.kmes.buffer import KmesBuffer, store_load_fence

_HDR = L.EVENT_HEADER
_HS = L.HEADER_SIZE


@dataclass(slots=True)
class WriterStats:
    """Counters of one writer (private, never shared)."""

    written: int = 0  # events written to the buffer
    dropped: int = 0  # events larger than 50% of capacity (seq consumed)
    overwritten: int = 0  # events discarded by advancing tail_pos
    wakes: int = 0  # futex_counter increments + FUTEX_WAKE calls
    corrupt_resets: int = 0  # times a scribbled data region forced a full discard


class Writer:
    """Writes KMES events into ``buffer`` (docs/kmes.md section 6); see the module doc."""

    def __init__(self, buffer: KmesBuffer, *, next_seq: int = 1) -> None:
        self.buffer = buffer
        self.cpu = buffer.cpu
        self.capacity = cap = buffer.capacity
        self._mask = cap - 1
        self._max = L.max_event_size(cap)
        self._data = buffer.data
        self._data32 = buffer.data.cast("I")
        self._meta = buffer.meta
        self._w64 = buffer.words64
        self._w32 = buffer.words32
        self._futex_addr = buffer.futex_addr
        self._fence = threading.Lock()
        # Private positions (docs/kmes.md §6.1), never read back from shared memory.
        self._front = 0  # end of the last event written (maybe unpublished)
        self._published = 0  # last write_pos stored
        self._tail = 0  # oldest surviving event
        self._futex = 0
        self._seq = next_seq - 1
        self.stats = WriterStats()

    # -- private positions, for the owner (bridge resize, tests) ---------------------------
    @property
    def write_pos(self) -> int:
        """The end of the last event written (bytes, free-running), maybe not published yet:
        the writer's private copy, never read back from shared memory."""
        return self._front

    @property
    def tail_pos(self) -> int:
        """The start of the oldest event still in the buffer (the writer's private copy):
        events before it were overwritten to make room."""
        return self._tail

    @property
    def last_seq(self) -> int:
        """The last sequence number taken (written or dropped)."""
        return self._seq

    # -- public API --------------------------------------------------------------------------
    def write(
        self,
        event_type: int,
        payload: bytes | bytearray | memoryview,
        origin_class: int = L.ORIGIN_BRIDGE,
        timestamp: int | None = None,
    ) -> int:
        """Write one event and publish it (docs/kmes.md §6.2, §6.4); return its seq (also
        if dropped)."""
        self._seq += 1
        ts = time.time_ns() if timestamp is None else timestamp  # CLOCK_REALTIME
        self._put(event_type, origin_class, ts, self._seq, payload)
        self.publish()
        return self._seq

    def write_batch(self, events: Iterable[tuple[int, int, bytes | bytearray | memoryview]]) -> int:
        """Write ``(event_type, origin_class, payload)`` events, then publish once.

        One write_pos store and one need_wake check cover the batch (docs/kmes.md
        §6.5). Returns the last seq taken.
        """
        put = self._put
        now = time.time_ns
        for event_type, origin_class, payload in events:
            self._seq += 1
            put(event_type, origin_class, now(), self._seq, payload)
        self.publish()
        return self._seq

    def write_raw(self, event: bytes | bytearray | memoryview) -> None:
        """Copy an already-built event (header included) as is; does not publish.

        For the bridge's boot-buffer flush and resize copy: the event keeps its seq and
        timestamp. The writer's seq counter does *not* move (the caller built the writer
        with ``next_seq`` past every copied event). ``event_size`` is checked.
        """
        size, _t, _o, _f, _ts, _seq, _c, _r, plen = _HDR.unpack_from(event, 0)
        if size != len(event) or size % 8 or size < _HS + plen or size > self._max:
            raise ValueError(f"not a KMES event that fits: size {size}, {len(event)} bytes")
        self._room(size)
        off = self._front & self._mask
        self._data[off : off + size] = event
        self._front += size
        self.stats.written += 1

    def consume_seq_through(self, seq: int) -> None:
        """Make ``seq`` (and everything before) count as taken: the next event gets at
        least ``seq + 1`` (for a writer continuing another one)."""
        self._seq = max(self._seq, seq)

    def publish(self) -> None:
        """docs/kmes.md §6.4: store write_pos, then wake sleeping consumers if need_wake is set."""
        # Re-store the private generation and tail_pos over anything a consumer may have
        # scribbled (same values as before: honest readers see no change; the static
        # fields are re-stored by KmesBuffer.restore_static from the bridge's loop).
        self._w64[L.Q_GENERATION] = self.buffer.private_generation
        self._w64[L.Q_TAIL_POS] = self._tail
        self._published = self._front
        # Release store of write_pos: the event bytes above were stored first (x86-64
        # keeps store order). Pairs with Reader.drain's load of write_pos.
        self._w64[L.Q_WRITE_POS] = self._front
        store_load_fence(self._fence)  # StoreLoad: write_pos visible before need_wake read
        # Load need_wake (pairs with Reader.wait's need_wake = 1 store). Never trusted
        # beyond "non-zero": a scribbled value only costs a spurious wake.
        if self._meta[L.OFF_NEED_WAKE]:
            self.wake()

    def wake(self) -> None:
        """futex_counter += 1 (release store; pairs with Reader.wait's counter load), then
        FUTEX_WAKE every waiter. ``publish`` calls it when need_wake is set; the bridge
        also calls it after retiring a buffer so sleepers move to the new one at once."""
        self._futex = (self._futex + 1) & 0xFFFFFFFF
        self._w32[L.I_FUTEX_COUNTER] = self._futex
        futex_wake(self._futex_addr)
        self.stats.wakes += 1

    # -- internals ---------------------------------------------------------------------------
    def _put(
        self,
        event_type: int,
        origin_class: int,
        ts: int,
        seq: int,
        payload: bytes | bytearray | memoryview,
    ) -> None:
        n = len(payload)
        size = (_HS + n + 7) & ~7
        if size > self._max:  # docs/kmes.md §6.2 step 3: drop, seq consumed
            self.stats.dropped += 1
            return
        self._room(size)
        off = self._front & self._mask
        data = self._data
        _HDR.pack_into(data, off, size, event_type, origin_class, 0, ts, seq, self.cpu, 0, n)
        end = off + _HS + n
        data[off + _HS : end] = payload
        if end != off + size:
            data[end : off + size] = bytes(off + size - end)
        self._front += size
        self.stats.written += 1

    def _room(self, size: int) -> None:
        """Make room for ``size`` bytes at the frontier (docs/kmes.md §6.3)."""
        # Keep unpublished bytes <= capacity/2 so tail_pos never passes the published
        # write_pos (size <= capacity/2 too): consumers always see tail <= write_pos.
        if self._front - self._published > self._max:
            self.publish()
        need = self._front + size - self.capacity
        if need <= self._tail:
            return
        tail = self._tail
        data32, mask, front, maxsize = self._data32, self._mask, self._front, self._max
        walked = 0
        while tail < need:
            esz = data32[(tail & mask) >> 2]  # event_size of the oldest event
            if esz < _HS or esz & 7 or esz > maxsize or tail + esz > front:
                # Someone scribbled on the data region: don't walk garbage.
                self.stats.corrupt_resets += 1
                tail = front
                break
            tail += esz
            walked += 1
        self.stats.overwritten += walked
        self._tail = tail
        # Release store of tail_pos *before* the event bytes that overwrite the freed
        # space (pairs with the reader's tail loads: lapping and torn-read checks).
        self._w64[L.Q_TAIL_POS] = tail
