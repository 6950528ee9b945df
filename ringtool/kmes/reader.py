"""The KMES reader: the read protocol (docs/kmes.md section 7) over one per-CPU buffer.

Contract:

* One :class:`Reader` per CPU buffer, used by one thread at a time. It owns the two
  descriptors it is given (attach protocol v2: metadata read-write, data read-only),
  closing them on :meth:`close`, on a generation switch, or if they are refused.
* :meth:`Reader.drain` returns validated events in per-CPU order, each exactly once.
  Events overwritten before they could be read are never returned; they are counted:
  ``stats.lapped_events`` (seq gaps right after a lap or a resync), ``stats.gap_events``
  (other gaps: events the writer dropped as too large), ``stats.laps``, ``stats.torn``.
* The metadata page is writable by every consumer, so its positions are untrusted: a
  snapshot (write_pos, tail_pos) must be 8-aligned, tail <= write, write - tail <=
  capacity, write_pos must not go back, and every header walked must pass
  :func:`kmes_layout.header_ok` with strictly increasing seqs. Anything else is counted
  once per snapshot in ``stats.inconsistent`` and the reader resynchronises (waits for
  the writer to store its private positions again, then re-reads from tail_pos, handing
  out only seqs above the last one returned). Only bytes at walked event boundaries of
  the read-only data region are returned.
* When the bridge resizes (generation bumped in the old buffer), ``drain`` empties the
  old buffer, then calls ``reattach(cpu)`` for new descriptors and resumes at the first
  event with seq > the last one returned: nothing lost, nothing duplicated.
* ``writer_pid`` (the bridge's pid from SO_PEERCRED) is watched with a pidfd; the waits
  in :mod:`ringtool.kmes.wait` raise :class:`KmesBridgeDiedError` once it has exited
  and the buffer is drained.
* Every method raises only ``ringtool.errors`` types; each call does bounded work.

Ordering: each shared word is one aligned load (``memoryview.cast``). x86-64 doesn't
reorder loads with loads, so "load write_pos, then read data" is an acquire load (pairs
with ``Writer.publish``), and "read data, then re-load tail_pos" detects torn reads (pairs
with ``Writer._room``'s tail store, which precedes the overwrite). ARM64 would need
``ldar`` for those loads.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields

from ringtool.errors import KmesError, KmesFormatError
from ringtool.kernel.pidfd import ProcessWatch
from ringtool.kmes import layout as L
from ringtool.kmes.buffer import MappedBuffer, open_buffer
from ringtool.kmes.layout import Event
from ringtool.kmes.wait import wait_any

_HDR = L.EVENT_HEADER
_HS = L.HEADER_SIZE
_MAX_ROUNDS = 64  # torn-read retries per drain() before giving up until the next call
__all__ = ["Reader", "ReaderStats", "Reattach", "open_buffer", "wait_any"]
GEN_RECHECK = 1.0  # seconds a generation value found scribbled is ignored
WATCH_EVERY = 0.25  # seconds between checks of the writer's pidfd while waiting
#: After this many seconds without new events the reader asks the bridge (over the
#: attach socket, which consumers cannot forge) whether its buffer is still current:
#: a retired buffer's generation word can be rewritten by any consumer (docs/kmes.md §7.8).
IDLE_RECHECK = 2.0

#: ``reattach(cpu) -> (meta_fd, data_fd, generation)``: a fresh attach for one CPU.
Reattach = Callable[[int], tuple[int, int, int]]


@dataclass(slots=True)
class ReaderStats:
    events: int = 0
    laps: int = 0  # times read_pos < tail_pos was found
    lapped_events: int = 0  # events lost to overwrite (seq gap after a lap or resync)
    gap_events: int = 0  # other seq gaps (dropped by the writer)
    torn: int = 0  # batches discarded because overwritten during the read
    inconsistent: int = 0  # metadata snapshots that made no sense (resynchronised)
    generations: int = 0  # generation switches

    def add(self, other: ReaderStats) -> None:
        """Add ``other``'s counts to these (totals across re-attaches)."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class Reader:
    """Reads one per-CPU KMES buffer from ``meta_fd``/``data_fd`` (owned from now on).

    ``start``: "tail" reads everything still in the buffer, "head" only new events.
    ``cpu`` is the CPU the attach reply named for these descriptors; given, the CPU and
    the capacity (the sealed data memfd's size) are not taken from the shared page.
    ``generation`` is the generation the descriptors were handed out with (the attach
    reply's); default: the word as mapped. ``reattach`` gives fresh descriptors on a
    generation change (without it that raises :class:`KmesError`).
    """

    def __init__(
        self,
        meta_fd: int,
        data_fd: int,
        *,
        generation: int | None = None,
        reattach: Reattach | None = None,
        start: str = "tail",
        spin: float = 0.0,
        writer_pid: int | None = None,
        cpu: int | None = None,
    ) -> None:
        self._reattach = reattach
        self.spin = spin
        self.fence = threading.Lock()
        self.stats = ReaderStats()
        self.last_seq = 0  # seq of the last event returned (0: none yet)
        self._ignored_gen = -1  # a scribbled generation value found to be no swap...
        self._recheck_at = 0.0  # ...until then (monotonic): then ask the bridge again
        self._lapped = False
        self._bad: tuple[int, int] | None = None  # snapshot already counted inconsistent
        self._resync = False  # our position is not a walked boundary: restart at tail
        self._after = -1  # _parse: the seq the walk's first event must exceed
        self._walk_seq = -1  # seq of the last event walked over (returned or not)
        self.writer_pid = writer_pid
        self._watch: ProcessWatch | None = None
        self._next_check = 0.0
        self._idle_check_at = time.monotonic() + IDLE_RECHECK
        self._map(open_buffer(meta_fd, data_fd, cpu), generation)
        try:
            if writer_pid is not None:
                self._watch = ProcessWatch(writer_pid)
            self._rp = 0
            self._resync = True
            wp, tail = int(self._w64[L.Q_WRITE_POS]), int(self._w64[L.Q_TAIL_POS])
            if self._consistent(wp, tail):
                self._resync = False
                if start == "head":
                    self._rp = wp
                    self.last_seq = self._seq_before(wp, tail)
                else:  # everything still in the buffer; earlier seqs are not gaps
                    self._rp = tail
                    self.last_seq = max(self._seq_before(tail + 1, tail) - 1, 0)
            self._walk_seq = self.last_seq
        except BaseException:
            self.close()
            raise

    def _map(self, buf: MappedBuffer, generation: int | None) -> None:
        self._buf = buf
        self.cpu = buf.cpu
        self.capacity = buf.capacity
        self._mask = buf.capacity - 1
        self._max_size = L.max_event_size(buf.capacity)
        self._data = buf.data
        self._w64 = buf.words64
        self.words32 = buf.words32
        self.meta = self._meta = buf.meta  # _meta: the name older tests use
        self.futex_addr = buf.futex_addr
        self.generation = buf.generation() if generation is None else generation

    @property
    def read_pos(self) -> int:
        """The reader's own position in the buffer (bytes, free-running): where the next
        :meth:`drain` continues. Private to this reader, never stored in shared
        memory."""
        return self._rp

    def fileno(self) -> int:
        """The metadata memfd of the buffer being read (its futex word is what :meth:`wait`
        sleeps on)."""
        return self._buf.meta_fd

    def close(self) -> None:
        """Unmap the buffer and close its two descriptors (and the watch of the bridge's
        process). Events already returned stay valid: they are copies."""
        self._buf.close()
        if self._watch is not None:
            self._watch.close()

    def writer_exited(self) -> bool:
        """Whether the writer (``writer_pid``) has exited; checks its pidfd at most
        every :data:`WATCH_EVERY` seconds (False without a ``writer_pid``)."""
        if self._watch is None:
            return False
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + WATCH_EVERY
            return self._watch.exited()
        return False

    def has_data(self) -> bool:
        """Whether drain() may have something to do (events or a generation change)."""
        if self._gen_changed(self._w64[L.Q_GENERATION]):
            return True
        if self._reattach is not None and time.monotonic() >= self._idle_check_at:
            return True  # drain() asks the bridge whether this buffer is still current
        snap = (self._w64[L.Q_WRITE_POS], self._w64[L.Q_TAIL_POS])
        return (snap[0] != self._rp or self._resync) and snap != self._bad

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until events may be available (see :func:`ringtool.kmes.wait.wait_any`)."""
        return wait_any([self], timeout)

    def _gen_changed(self, gen: int) -> bool:
        """Whether the generation word asks for a switch. A value already found to be
        scribbled is ignored for :data:`GEN_RECHECK` seconds only: on a retired buffer
        nobody restores the word, so the bridge is asked again (docs/kmes.md §7.7-7.8)."""
        if gen == self.generation:
            return False
        return gen != self._ignored_gen or time.monotonic() >= self._recheck_at

    def _idle_retired(self) -> bool:
        """Whether, idle for :data:`IDLE_RECHECK` s, the bridge says this buffer was
        replaced (its data inode differs). The answer comes from the attach socket, not
        from the shared page; a bridge that does not answer is left to the death check."""
        now = time.monotonic()
        if self._reattach is None or now < self._idle_check_at:
            return False
        self._idle_check_at = now + IDLE_RECHECK
        try:
            meta, data, _gen = self._reattach(self.cpu)
        except KmesError:
            return False
        try:
            return os.fstat(data).st_ino != os.fstat(self._buf.data_fd).st_ino
        finally:
            os.close(meta)
            os.close(data)

    def _consistent(self, wp: int, tail: int) -> bool:
        return not (wp | tail) & 7 and tail <= wp and wp - tail <= self.capacity

    def _inconsistent(self, snap: tuple[int, int]) -> list[Event]:
        self.stats.inconsistent += 1
        self._bad = snap
        return []

    # -- the drain loop (docs/kmes.md §7.3) ------------------------------------------------
    def drain(self, max_events: int = 4096) -> list[Event]:
        """Up to ``max_events`` new events (never blocks; [] when none are available)."""
        w64 = self._w64
        for _ in range(_MAX_ROUNDS):
            # Generation first, then write_pos: a bumped generation means the old buffer
            # is final (the bridge switched before bumping), so the write_pos loaded after
            # it is the last one. Pairs with KmesBuffer.bump_generation.
            gen = w64[L.Q_GENERATION]
            wp = w64[L.Q_WRITE_POS]  # acquire load; pairs with Writer.publish's store
            tail = w64[L.Q_TAIL_POS]  # acquire load; pairs with Writer._room's store
            snap = (wp, tail)
            if wp == self._rp and not self._resync:
                if self._gen_changed(gen) or self._idle_retired():
                    self._switch(gen)
                    w64 = self._w64
                    continue
                return []
            bad = snap == self._bad or not self._consistent(wp, tail)
            if bad or (wp < self._rp and not self._resync):  # write_pos never goes back
                if self._gen_changed(gen):  # a retired buffer's page is never restored:
                    self._switch(gen)  # resync in the new one (it has the survivors)
                    w64 = self._w64
                    continue
                if not bad:  # a sane snapshot behind us: our position came from a
                    self.stats.inconsistent += 1  # forged write_pos; re-base at tail
                    self._resync = True  # (seqs up to last_seq are dropped, not repeated)
                    continue
                # counted once per snapshot; the writer stores its own values again
                return [] if snap == self._bad else self._inconsistent(snap)
            rp = self._rp
            # Seqs only grow: from a trusted position the first event must be newer than
            # the last one walked (older bytes there are stale data past a scribbled
            # write_pos); re-basing at tail re-reads older events, dropped by _account.
            self._after = -1 if self._resync else self._walk_seq
            if self._resync or rp < tail:  # §7.3 step 4: lapped (or re-basing): go to tail
                self.stats.laps += rp < tail and not self._resync
                self._lapped = True
                rp = tail
            out, end, ok = self._parse(rp, wp, max_events)
            tail2 = w64[L.Q_TAIL_POS]  # §7.3 step 6: re-read tail (torn-read check)
            if tail2 != tail and rp < tail2:
                self.stats.torn += 1
                continue
            if end == rp and not ok:  # nothing valid at our position
                self.stats.inconsistent += 1
                if not self._resync:  # re-base at tail in this same snapshot
                    self._resync = True
                    continue
                self._bad = snap  # nothing valid at tail either: wait for the writer
                if self._gen_changed(gen):
                    continue  # switches above
                return []
            self._rp, self._resync = end, False
            if out:
                self._walk_seq = out[-1].seq
            if not ok:  # valid events, then garbage: keep them, resync after
                self._inconsistent(snap)
            keep = self._account(out)
            if keep:
                self._idle_check_at = time.monotonic() + IDLE_RECHECK
            if keep or not ok or end == wp:
                return keep
        return []  # bounded: a writer (or scribbler) outran us; the caller comes back

    def _parse(self, rp: int, wp: int, limit: int) -> tuple[list[Event], int, bool]:
        """Walk headers from ``rp`` to ``wp`` with seqs increasing from above
        ``self._after``: (events, end position, all valid)."""
        data, mask, unpack, ok = self._data, self._mask, _HDR.unpack_from, L.header_ok
        cpu_id, max_size = self.cpu, self._max_size
        out: list[Event] = []
        pos, prev = rp, self._after
        while pos < wp and len(out) < limit:
            off = pos & mask
            size, etype, origin, flags, ts, seq, cpu, res, plen = unpack(data, off)
            if (
                not ok(size, etype, origin, flags, cpu, res, plen, cpu_id=cpu_id, max_size=max_size)
                or pos + size > wp
                or seq <= prev
            ):
                return out, pos, False
            out.append(
                Event(etype, origin, flags, ts, seq, cpu, bytes(data[off + _HS : off + _HS + plen]))
            )
            pos += size
            prev = seq
        return out, pos, True

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

    # -- the generation switch (docs/kmes.md §7.7) -----------------------------------------
    def _switch(self, seen_gen: int) -> None:
        if self._reattach is None:
            raise KmesError(f"KMES buffer of CPU {self.cpu} was resized and no re-attach is set")
        old_gen = self.generation
        meta, data, new_gen = self._reattach(self.cpu)
        try:
            same = os.fstat(data).st_ino == os.fstat(self._buf.data_fd).st_ino
        except OSError as exc:
            os.close(meta)
            os.close(data)
            raise KmesFormatError(f"re-attach gave a bad descriptor: {exc}") from None
        if same:
            # Same buffer: the generation word was scribbled by some consumer, not bumped
            # by the bridge. Ignore that value (the bridge restores the word).
            os.close(meta)
            os.close(data)
            self._ignored_gen = seen_gen
            self._recheck_at = time.monotonic() + GEN_RECHECK
            return
        new = open_buffer(meta, data, self.cpu)
        if new.cpu != self.cpu or new_gen <= old_gen:
            new.close()
            raise KmesFormatError(f"re-attach gave CPU {new.cpu} generation {new_gen}")
        self._buf.close()
        self._map(new, new_gen)
        # Resume at the first event with seq > last_seq: re-base at the new buffer's
        # tail and let drain() walk (and validate) from there; older seqs are dropped
        # by _account, missing ones counted as lapped (overwritten, or left out of the
        # copy because they no longer fit).
        self._bad = None
        self._rp, self._resync = 0, True
        self.stats.generations += 1

    def _header(self, pos: int) -> tuple[int, int]:
        """(event_size, seq) of a valid header at ``pos``, else (0, 0)."""
        size, etype, origin, flags, _ts, seq, cpu, res, plen = _HDR.unpack_from(
            self._data, pos & self._mask
        )
        ok = L.header_ok(
            size, etype, origin, flags, cpu, res, plen, cpu_id=self.cpu, max_size=self._max_size
        )
        return (size, seq) if ok else (0, 0)

    def _seq_before(self, pos: int, tail: int) -> int:
        """Seq of the last event starting before ``pos``, walking from ``tail`` (0 if none)."""
        last = 0
        end = min(pos, tail + self.capacity)
        while tail < end:
            size, seq = self._header(tail)
            if not size or seq <= last:  # seqs only grow along a real chain
                break
            tail, last = tail + size, seq
        return last
