"""The source-independent core of ``ringtool bridge``.

:class:`KmesBridge` takes ``(cpu, origin_class, event_type, payload)`` events from any
source (BPF ring buffer, perf buffer, the bridge itself), batches them per CPU, and
writes each batch to that CPU's KMES :class:`Writer`. Before the buffers exist
(:meth:`KmesBridge.start`) events go to per-CPU boot buffers (docs/kmes.md section 9).
It serves the attach protocol, resizes on request (SIGHUP -> :meth:`request_reload`, serviced by
:meth:`service` from the event loop), and shuts down cleanly.

CPU hotplug: the first event from a possible CPU that has no buffer (a CPU brought
online after start) is queued, and the next :meth:`flush` gives that CPU a buffer. The
new buffer is announced the KMES way, by a generation change: every existing buffer
is switched exactly as in a resize to the same capacity (docs/kmes.md §10.3-10.4:
survivors copied, old generation bumped), so every attached reader re-attaches and
finds the new CPU in the reply (:func:`ringtool.kmes.attach.attach_new` gives it
readers for it). Nothing is lost or uncounted on the way: events from a CPU that is
not even possible are counted in ``unknown_cpu``. A CPU that goes offline keeps its buffer.

Threading contract: :meth:`submit` may be called from any thread (sources with their own
callback threads); :meth:`flush`, :meth:`resize` and :meth:`service` serialise on one
lock. The attach server runs in its own thread and only takes the lock to dup the
current descriptors. :meth:`request_reload` is async-signal-safe (sets a flag).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType

from ringtool.bridge.attach_server import AttachServer
from ringtool.errors import KmesError
from ringtool.kernel.cpus import possible_cpus
from ringtool.kmes import layout as L
from ringtool.kmes.attach_protocol import DEFAULT_SOCKET, AttachInfo
from ringtool.kmes.boot import BOOT_CAPACITY, BootBuffer
from ringtool.kmes.buffer import KmesBuffer
from ringtool.kmes.config import DEFAULT_CONFIG, resolve_capacity
from ringtool.kmes.writer import Writer

_HS = L.HEADER_SIZE
#: Seconds the bridge keeps re-storing a retired buffer's metadata after a resize.
RETIRED_GRACE = 5.0


def copy_surviving(old: Writer, new: Writer) -> int:
    """docs/kmes.md §10.3 step 2: copy ``old``'s surviving events (seq and timestamp kept) into
    ``new``, oldest first; events too large for ``new`` are skipped (their seq becomes a
    gap). ``new`` must have been built with ``next_seq=old.last_seq + 1``.

    Nothing here comes from the shared metadata page: the range is ``old``'s private
    ``tail_pos``..``write_pos``, and the events are read from the data region, which
    only the writer's own mapping can write (``F_SEAL_FUTURE_WRITE``). They are still
    checked (size, and seq increasing and <= ``old.last_seq``); the copy stops at the
    first one that fails. Publishes ``new``; returns the number copied."""
    data, mask = old.buffer.data, old.capacity - 1
    pos, end = old.tail_pos, old.write_pos
    if end - pos > new.capacity:  # the oldest would be overwritten anyway: skip them
        skip_to = end - new.capacity
        while pos < skip_to:
            size = L.EVENT_HEADER.unpack_from(data, pos & mask)[0]
            if size < _HS or size & 7 or pos + size > end:
                break
            pos += size
    copied = 0
    prev_seq = 0
    while pos < end:
        off = pos & mask
        size, *_h, seq, _cpu, _res, _plen = L.EVENT_HEADER.unpack_from(data, off)
        if size < _HS or size & 7 or pos + size > end or not prev_seq < seq <= old.last_seq:
            break
        prev_seq = seq
        try:
            new.write_raw(data[off : off + size])
            copied += 1
        except ValueError:
            pass
        pos += size
    new.consume_seq_through(old.last_seq)  # dropped trailing seqs stay consumed
    new.publish()
    return copied


class KmesBridge:
    """Per-CPU KMES buffers fed from any event source; see the module doc."""

    def __init__(
        self,
        cpus: Iterable[int],
        *,
        socket_path: str | None = DEFAULT_SOCKET,
        capacity: int | None = None,
        config_path: str | Path = DEFAULT_CONFIG,
        boot_capacity: int = BOOT_CAPACITY,
        possible: Iterable[int] | None = None,
    ) -> None:
        self.cpus = sorted(set(cpus))
        if not self.cpus:
            raise KmesError("the KMES bridge needs at least one CPU")
        #: CPUs that may get a buffer later (hotplug; default: the kernel's possible list)
        self.possible = frozenset(possible_cpus() if possible is None else possible)
        self.possible |= frozenset(self.cpus)
        self._boot_capacity = boot_capacity
        self.socket_path = socket_path
        self.config_path = config_path
        self._explicit = capacity
        if capacity is not None:
            L.check_capacity(capacity)
        self._lock = threading.Lock()
        self._boot: dict[int, BootBuffer] | None = {
            c: BootBuffer(c, boot_capacity) for c in self.cpus
        }
        self.buffers: dict[int, KmesBuffer] = {}
        self.writers: dict[int, Writer] = {}
        # deque: append (submit) and popleft (flush) are atomic, so any thread may submit.
        self._pending: dict[int, deque[tuple[int, int, bytes]]] = {c: deque() for c in self.cpus}
        self._server: AttachServer | None = None
        self._reload = False
        self._retired: list[tuple[float, Writer]] = []  # (release time, retired writer)
        self.stop_requested = False
        self.capacity = 0
        self.unknown_cpu = 0  # events from a CPU that is not possible (no buffer, ever)
        #: one line per CPU given a buffer after start (hotplug); the caller prints them
        self.notes: deque[str] = deque()
        #: called with every submitted event, in the submitting thread (``--export``:
        #: ringtool.export.bridge_hook); None: nothing extra
        self.tap: Callable[[int, int, int, bytes], None] | None = None
        #: called by the attach server's thread with (pid, uid) of each consumer served
        #: (``ringtool bridge``'s attach/detach lines: ringtool.bridge.consumers); set
        #: before :meth:`start`
        self.on_attach: Callable[[int, int], None] | None = None

    # -- input ---------------------------------------------------------------------------
    def submit(self, cpu: int, origin_class: int, event_type: int, payload: bytes) -> None:
        """Queue one event for ``cpu``; it is written on the next :meth:`flush`."""
        if self.tap is not None:
            self.tap(cpu, origin_class, event_type, payload)
        pending = self._pending.get(cpu)
        if pending is None:
            if cpu not in self.possible:
                self.unknown_cpu += 1
                return
            # A CPU that came online after start: queue; flush() gives it a buffer.
            # (setdefault is one atomic dict operation: two submitting threads share it.)
            pending = self._pending.setdefault(cpu, deque())
        pending.append((event_type, origin_class, payload))

    def flush(self) -> int:
        """Write the queued events: one batch (one write_pos store, one wake check) per
        CPU, or into the boot buffers before :meth:`start`. Returns events flushed."""
        n = 0
        with self._lock:
            for cpu in list(self._pending):  # a copy: submit() may add a CPU meanwhile
                if cpu not in self.writers and (self._boot is None or cpu not in self._boot):
                    self._add_cpu(cpu)
            for cpu in self.cpus:
                queue = self._pending[cpu]
                count = len(queue)  # popleft() exactly these: later submits wait their turn
                if not count:
                    continue
                n += count
                batch = [queue.popleft() for _ in range(count)]
                if self._boot is not None:
                    boot = self._boot[cpu]
                    for etype, origin, payload in batch:
                        boot.write(etype, payload, origin)
                else:
                    self.writers[cpu].write_batch(batch)
        return n

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Resolve the capacity, create the buffers, copy the boot events in, then serve
        the attach protocol (if a socket path was given)."""
        capacity = resolve_capacity(self._explicit, self.config_path)
        self.flush()
        with self._lock:
            boot = self._boot or {}
            for cpu in self.cpus:
                buf = KmesBuffer(cpu, capacity)
                b = boot.get(cpu)
                writer = Writer(buf, next_seq=(b.last_seq if b else 0) + 1)
                if b is not None:
                    b.flush_into(writer)
                self.buffers[cpu], self.writers[cpu] = buf, writer
            self.boot_stats = {c: b.stats for c, b in boot.items()}
            self._boot = None
            self.capacity = capacity
        if self.socket_path is not None:
            self._server = AttachServer(self.socket_path, self._provide, on_attach=self.on_attach)
            self._server.start()

    def _provide(self) -> AttachInfo:
        """Fresh consumer descriptors (meta0, data0, meta1, ...) of the current buffers,
        after re-storing their static fields (a scribbled magic must not turn honest
        consumers away)."""
        with self._lock:
            fds: list[int] = []
            try:
                for c in self.cpus:
                    buf = self.buffers[c]
                    buf.restore_static()
                    fds.extend(buf.consumer_fds())
            except BaseException:
                for fd in fds:
                    os.close(fd)
                raise
            gen = max(b.private_generation for b in self.buffers.values())
            return AttachInfo(list(self.cpus), fds, self.capacity, gen)

    def restore_static(self) -> None:
        """Re-store every buffer's static metadata from private copies (service loop);
        for retired buffers also their final positions and generation, until their grace
        period ends (then they are released)."""
        with self._lock:
            for buf in self.buffers.values():
                buf.restore_static()
            now = time.monotonic()
            for end, w in self._retired:
                w.buffer.restore_static()
                w.publish()  # final write_pos, tail_pos, bumped generation; wakes sleepers
                if now >= end:
                    w.buffer.close()
            self._retired = [(end, w) for end, w in self._retired if now < end]

    def resize(self, capacity: int) -> None:
        """docs/kmes.md §10.3, per CPU: copy survivors into a new buffer, switch, bump the old
        buffer's generation. Nothing is emitted meanwhile (the lock is held; callers
        feed events from the thread that calls this)."""
        L.check_capacity(capacity)
        self.flush()
        with self._lock:
            self._switch(capacity)

    def _switch(self, capacity: int, add: int | None = None) -> None:
        """The resize (lock held): every buffer replaced by one of ``capacity`` bytes and
        the next generation; ``add``: also a first buffer for that CPU, same generation."""
        gen = max(b.private_generation for b in self.buffers.values()) + 1
        if add is not None:
            self.buffers[add] = buf = KmesBuffer(add, capacity, gen)
            self.writers[add] = Writer(buf)
        for cpu in self.cpus:
            if cpu == add:
                continue
            old_buf, old_w = self.buffers[cpu], self.writers[cpu]
            new_buf = KmesBuffer(cpu, capacity, gen)
            new_w = Writer(new_buf, next_seq=old_w.last_seq + 1)
            copy_surviving(old_w, new_w)
            self.buffers[cpu], self.writers[cpu] = new_buf, new_w  # switch
            old_buf.bump_generation()
            old_w.wake()  # sleeping readers see the new generation now
            # Consumers keep their own mappings (docs/kmes.md §7.8). We keep ours for
            # RETIRED_GRACE s to re-store the final positions and generation over a
            # consumer's scribbles while honest readers finish the old buffer.
            self._retired.append((time.monotonic() + RETIRED_GRACE, old_w))
        self.capacity = capacity

    def _add_cpu(self, cpu: int) -> None:
        """A buffer for ``cpu`` (lock held): a boot buffer before :meth:`start`, else a
        switch of every buffer that announces it (see the module doc)."""
        if self._boot is None and not self.buffers:  # closed: nowhere to put them
            queue = self._pending.pop(cpu)
            self.unknown_cpu += len(queue)
            return
        self.cpus = sorted({*self.cpus, cpu})
        if self._boot is not None:
            self._boot[cpu] = BootBuffer(cpu, self._boot_capacity)
            return
        self._switch(self.capacity, add=cpu)
        gen = self.buffers[cpu].private_generation
        self.notes.append(f"CPU {cpu} came online: new KMES buffer, generation {gen} announced")

    def request_reload(self, _sig: int = 0, _frame: FrameType | None = None) -> None:
        """Ask for a config re-read + resize at the next :meth:`service` (signal-safe)."""
        self._reload = True

    def request_stop(self, _sig: int = 0, _frame: FrameType | None = None) -> None:
        self.stop_requested = True

    def install_signal_handlers(self) -> None:
        """SIGHUP -> reload; SIGINT/SIGTERM -> stop (main thread only)."""
        signal.signal(signal.SIGHUP, self.request_reload)
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)

    def service(self) -> bool:
        """Periodic work from the event loop: re-store the static metadata fields, then
        do a requested reload; return True if the capacity changed."""
        if self._boot is not None:
            return False
        self.restore_static()
        if not self._reload:
            return False
        self._reload = False
        capacity = resolve_capacity(self._explicit, self.config_path)
        if capacity == self.capacity:
            return False
        self.resize(capacity)
        return True

    def close(self) -> None:
        """Flush, stop serving, release the buffers (idempotent)."""
        if self._boot is None:
            self.flush()
        if self._server is not None:
            self._server.close()
            self._server = None
        with self._lock:
            for buf in self.buffers.values():
                buf.close()
            for _end, w in self._retired:
                w.buffer.close()
            self._retired.clear()
            self.buffers.clear()
            self.writers.clear()

    def stats(self) -> dict[int, dict[str, int]]:
        """Per-CPU writer counters."""
        out: dict[int, dict[str, int]] = {}
        for cpu, w in self.writers.items():
            s = w.stats
            out[cpu] = {
                "written": s.written,
                "dropped": s.dropped,
                "overwritten": s.overwritten,
                "wakes": s.wakes,
                "last_seq": w.last_seq,
            }
        return out
