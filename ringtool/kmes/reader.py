"""The KMES reader: §5.1.8 drain loop, notification wait and generation switch.

Contract:

* One :class:`Reader` per CPU buffer, used by one thread at a time. It owns the
  descriptor it is given (closes it on :meth:`close` or when switching generation).
* :meth:`Reader.drain` returns validated events in per-CPU order, each exactly once.
  Events that were overwritten before they could be read are never returned; they are
  counted: ``stats.lapped_events`` (lost to overwrite: sequence gaps right after a lap),
  ``stats.gap_events`` (other gaps: events the writer dropped as too large),
  ``stats.laps``, ``stats.torn`` (a batch discarded because the writer overwrote it
  during the read, then retried).
* When the bridge resizes (generation bumped in the old buffer), ``drain`` first empties
  the old buffer, then calls ``reattach(cpu)`` for a new descriptor and resumes at the
  first event with seq > the last one returned: nothing lost, nothing duplicated.

Ordering: each shared word is one aligned load (``memoryview.cast``). x86-64 doesn't
reorder loads with loads, so "load write_pos, then read data" is an acquire load (pairs
with ``Writer.publish``), and "read data, then re-load tail_pos" detects torn reads (pairs
with ``Writer._room``'s tail store, which precedes the overwrite). ``wait`` fences its
need_wake store against the write_pos re-load (see ``store_load_fence``). ARM64 would
need ``ldar`` for those loads and ``dmb ish`` for the fence.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ringtool.errors import KmesError, KmesFormatError
from ringtool.kernel.futex import futex_wait, futex_waitv
from ringtool.kmes.buffer import MappedBuffer, store_load_fence
from ringtool.protocol import kmes_layout as L
from ringtool.protocol.kmes_layout import Event

_HDR = L.EVENT_HEADER
_HS = L.HEADER_SIZE
#: Longest single futex sleep: with several consumers on one buffer another one may
#: clear need_wake, so a sleeper re-arms it this often (bounds that delay).
WAIT_SLICE = 0.05


@dataclass(slots=True)
class ReaderStats:
    events: int = 0
    laps: int = 0  # times read_pos < tail_pos was found
    lapped_events: int = 0  # events lost to overwrite (seq gap after a lap)
    gap_events: int = 0  # other seq gaps (dropped by the writer)
    torn: int = 0  # batches discarded because overwritten during the read
    inconsistent: int = 0  # metadata snapshots that made no sense (retried later)
    generations: int = 0  # generation switches


class Reader:
    """Reads one per-CPU KMES buffer from descriptor ``fd`` (owned from now on).

    ``start``: "tail" reads everything still in the buffer, "head" only new events.
    ``generation`` is the generation the descriptor was handed out with (the attach
    reply's); the buffer's own word may already be bumped by the time it is mapped, and
    the reader must notice that. Default: the word as mapped.
    ``reattach(cpu)`` returns ``(descriptor, generation)`` of the current buffer for
    ``cpu`` (a fresh attach); without it a generation change raises :class:`KmesError`.
    """

    def __init__(
        self,
        fd: int,
        *,
        generation: int | None = None,
        reattach: Callable[[int], tuple[int, int]] | None = None,
        start: str = "tail",
        spin: float = 0.0,
    ) -> None:
        self._reattach = reattach
        self._spin = spin
        self._fence = threading.Lock()
        self.stats = ReaderStats()
        self.last_seq = 0  # seq of the last event returned (0: none yet)
        self._ignored_gen = -1  # a scribbled generation value found to be no swap
        self._lapped = False
        self._map(MappedBuffer(fd), generation)
        w64 = self._buf.words64
        if start == "head":
            self._rp = int(w64[L.Q_WRITE_POS])
            self.last_seq = self._seq_before(self._rp)
        else:  # everything still in the buffer; earlier seqs are not counted as gaps
            self._rp = int(w64[L.Q_TAIL_POS])
            self.last_seq = max(self._seq_before(self._rp + 1) - 1, 0)

    def _map(self, buf: MappedBuffer, generation: int | None) -> None:
        self._buf = buf
        self.cpu = buf.cpu
        self.capacity = buf.capacity
        self._mask = buf.capacity - 1
        self._data = buf.data
        self._data32 = buf.data.cast("I")
        self._w64 = buf.words64
        self._w32 = buf.words32
        self._meta = buf.meta
        self.generation = buf.generation() if generation is None else generation

    @property
    def read_pos(self) -> int:
        return self._rp

    def fileno(self) -> int:
        return self._buf.fd

    def close(self) -> None:
        self._data32.release()
        self._buf.close()

    # -- §5.1.8.1 drain loop -------------------------------------------------------------
    def drain(self, max_events: int = 4096) -> list[Event]:
        """Up to ``max_events`` new events (never blocks; [] when none are available)."""
        w64 = self._w64
        while True:
            # Generation first, then write_pos: a bumped generation means the old buffer
            # is final (the bridge switched before bumping), so the write_pos loaded after
            # it is the last one. Pairs with KmesBuffer.bump_generation.
            gen = w64[L.Q_GENERATION]
            wp = w64[L.Q_WRITE_POS]  # acquire load; pairs with Writer.publish's store
            if wp == self._rp:
                if gen != self.generation and gen != self._ignored_gen:
                    self._switch(gen)
                    w64 = self._w64
                    continue
                return []
            tail = w64[L.Q_TAIL_POS]  # acquire load; pairs with Writer._room's store
            if tail > wp or wp - tail > self.capacity:
                self.stats.inconsistent += 1  # scribbled metadata: try later
                return []
            if wp < self._rp:
                # write_pos never goes back: our position came from scribbled metadata
                # (or write_pos is scribbled now). Restart at tail; seq filtering in
                # _account keeps re-read events from being handed out twice.
                self.stats.inconsistent += 1
                self._rp = tail
                self._lapped = True
                return []
            rp = self._rp
            if rp < tail:  # step 2: lapped
                self.stats.laps += 1
                self._lapped = True
                rp = self._rp = tail
                if rp == wp:
                    continue
            out, end = self._parse(rp, wp, max_events)
            tail2 = w64[L.Q_TAIL_POS]  # step 5: re-read tail (torn-read check)
            if tail2 > tail and rp < tail2:
                self.stats.torn += 1
                continue
            if end < 0:  # garbage that wasn't a torn read: skip to the writer
                self._rp = wp
                self._lapped = True
                self.stats.inconsistent += 1
                continue
            self._rp = end
            return self._account(out)

    def _parse(self, rp: int, wp: int, limit: int) -> tuple[list[Event], int]:
        data, mask, unpack = self._data, self._mask, _HDR.unpack_from
        out: list[Event] = []
        pos = rp
        while pos < wp and len(out) < limit:
            off = pos & mask
            size, etype, origin, flags, ts, seq, cpu, res, plen = unpack(data, off)
            # Only the writer writes the data region, but a position taken from scribbled
            # metadata may point into a payload: reject anything not shaped like a header.
            if (
                size < _HS
                or size & 7
                or pos + size > wp
                or _HS + plen > size
                or cpu != self.cpu
                or flags
                or res
                or not etype
                or not 1 <= origin <= 3
            ):
                return out, -1
            out.append(
                Event(etype, origin, flags, ts, seq, cpu, bytes(data[off + _HS : off + _HS + plen]))
            )
            pos += size
        return out, pos

    def _account(self, events: list[Event]) -> list[Event]:
        """Sequence-gap accounting; drops anything not newer than ``last_seq``."""
        stats = self.stats
        last = self.last_seq
        keep = events
        if events and events[0].seq <= last:  # never hand out an event twice
            keep = [ev for ev in events if ev.seq > last]
        for ev in keep:
            gap = ev.seq - last - 1
            if gap > 0:
                if self._lapped:
                    stats.lapped_events += gap
                else:
                    stats.gap_events += gap
            self._lapped = False
            last = ev.seq
        stats.events += len(keep)
        self.last_seq = last
        return keep

    # -- §5.1.8.3 generation switch ------------------------------------------------------
    def _switch(self, seen_gen: int) -> None:
        if self._reattach is None:
            raise KmesError(f"KMES buffer of CPU {self.cpu} was resized and no re-attach is set")
        old_gen = self.generation
        fd, new_gen = self._reattach(self.cpu)
        if os.fstat(fd).st_ino == os.fstat(self._buf.fd).st_ino:
            # Same buffer: the generation word was scribbled by some consumer, not bumped
            # by the bridge. Ignore that value (the writer restores the word).
            os.close(fd)
            self._ignored_gen = seen_gen
            return
        new = MappedBuffer(fd)
        if new.cpu != self.cpu or new_gen <= old_gen:
            new.close()
            raise KmesFormatError(f"re-attach gave CPU {new.cpu} generation {new_gen}")
        self._data32.release()
        self._buf.close()
        self._map(new, new_gen)
        self._rp = self._first_after(self.last_seq)
        self.stats.generations += 1

    def _first_after(self, last_seq: int) -> int:
        """Position of the first event with seq > ``last_seq`` (write_pos if none)."""
        while True:
            wp = self._w64[L.Q_WRITE_POS]
            tail = self._w64[L.Q_TAIL_POS]
            if tail > wp or wp - tail > self.capacity:  # scribbled: start at the writer
                self._lapped = True
                return int(wp)
            pos = tail
            first = 0
            while pos < wp:
                off = pos & self._mask
                size, _t, _o, _f, _ts, seq, _c, _r, _p = _HDR.unpack_from(self._data, off)
                if size < _HS or size & 7 or seq > last_seq:
                    first = seq
                    break
                pos += size
            if self._w64[L.Q_TAIL_POS] == tail:  # not overwritten while scanning
                # Events after last_seq missing from the new buffer were overwritten (in
                # it, or left out of the copy because they no longer fit): a lap.
                self._lapped = pos == tail and first > last_seq + 1
                return min(pos, wp)

    def _seq_before(self, pos: int) -> int:
        """Seq of the last event starting before ``pos``, scanning from tail (0 if none)."""
        tail, last = self._w64[L.Q_TAIL_POS], 0
        wp = self._w64[L.Q_WRITE_POS]
        while tail < pos and tail < wp:
            size, _t, _o, _f, _ts, seq, *_ = _HDR.unpack_from(self._data, tail & self._mask)
            if size < _HS or size & 7:
                break
            tail, last = tail + size, seq
        return int(last)

    # -- §5.1.8.2 notification wait ------------------------------------------------------
    def _arm(self) -> int | None:
        """Steps 1-3: need_wake = 1, fence, re-check; the futex value, or None if data."""
        self._meta[L.OFF_NEED_WAKE] = 1  # release store; pairs with Writer.publish's load
        store_load_fence(self._fence)
        if self.has_data():
            self._meta[L.OFF_NEED_WAKE] = 0  # relaxed clear
            return None
        return int(self._w32[L.I_FUTEX_COUNTER])  # pairs with Writer.publish's store

    def has_data(self) -> bool:
        """Whether drain() may have something to do (events or a generation change)."""
        gen = self._w64[L.Q_GENERATION]
        changed = gen != self.generation and gen != self._ignored_gen
        return bool(changed or self._w64[L.Q_WRITE_POS] != self._rp)

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until events (or a generation change) may be available; False on timeout.

        An idle reader sleeps in FUTEX_WAIT (no CPU); it re-arms need_wake every
        :data:`WAIT_SLICE` seconds in case another consumer cleared it.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            val = self._arm()
            if val is None:
                return True
            if self._spin > 0:  # step 4: optional spin
                spin_end = time.monotonic() + self._spin
                while time.monotonic() < spin_end:
                    if self.has_data():
                        self._meta[L.OFF_NEED_WAKE] = 0
                        return True
            left = WAIT_SLICE if deadline is None else min(WAIT_SLICE, deadline - time.monotonic())
            if left <= 0:
                self._meta[L.OFF_NEED_WAKE] = 0
                return False
            futex_wait(self._buf.futex_addr, val, left)  # step 5
            self._meta[L.OFF_NEED_WAKE] = 0  # step 6 (relaxed)
            if self.has_data():
                return True


def wait_any(readers: list[Reader], timeout: float | None = None) -> bool:
    """Sleep until any of ``readers`` may have events (futex_waitv over all of them)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        words = []
        for r in readers:
            val = r._arm()
            if val is None:
                _disarm(readers)
                return True
            words.append((r._buf.futex_addr, val))
        left = WAIT_SLICE if deadline is None else min(WAIT_SLICE, deadline - time.monotonic())
        if left <= 0:
            _disarm(readers)
            return False
        try:
            futex_waitv(words, left)
        except KmesError:  # no futex_waitv: sleep on the first, poll the others
            futex_wait(words[0][0], words[0][1], min(left, 0.01))
        _disarm(readers)
        if any(r.has_data() for r in readers):
            return True


def _disarm(readers: list[Reader]) -> None:
    for r in readers:
        r._meta[L.OFF_NEED_WAKE] = 0
