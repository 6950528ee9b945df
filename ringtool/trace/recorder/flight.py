"""``ringtool trace --flight-recorder SIZE``: keep the newest events in the kernel, read
nothing while tracing, and write them on SIGUSR1 and at exit.

:class:`FlightSession` is a :class:`~ringtool.trace.reading.session.TraceSession` whose RINGBUF
sources write into rings that overwrite their oldest records, so the reader costs
nothing until a dump:

* where the kernel has ``BPF_F_RB_OVERWRITE`` (Linux 6.19+), the per-CPU RINGBUF group
  is created in overwrite mode, SIZE bytes a CPU, and a dump reads it with
  :class:`ringtool.RingBuffer`'s overwrite-mode reader
  (:mod:`ringtool.protocol.ringbuf_overwrite`);
* elsewhere the sources are compiled in the perf mode of ``bpf/percpu_ringbuf.h``
  (``RT_PCPU_PERF_FD``): records go to a PERF_EVENT_ARRAY whose per-CPU buffers of SIZE
  bytes are opened with ``write_backward``
  (:class:`ringtool.PerfBuffer` ``overwrite=True``), and a dump is
  :meth:`~ringtool.PerfBuffer.snapshot`.

The ``net`` source's PERF_EVENT_ARRAY is opened with ``write_backward`` too (SIZE
bytes a CPU, on every kernel; :mod:`ringtool.trace.recorder.flight_net`), and a dump's packets
go to the output and to ``--pcap``.

A dump writes the events recorded since the previous dump that the kernel still holds,
oldest first (timestamp order across CPUs), through the run's output (``--json``, CSV
or columns); the packets likewise, after the events. SIGUSR1
sets a flag (one received while ringtool started, held by
:class:`~ringtool.trace.signals.StartSignals`, sets it once the sources are attached:
the first dump comes on the loop's first turn); the signal wakes the loop through the wakeup pipe of
:class:`~ringtool.trace.signals.StopSignals`, which :meth:`FlightSession.wait` empties.
:func:`backend` says which ring this kernel gets (``ringtool doctor`` says it too).
"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from ringtool.kernel import bpf
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.kernel.ringbuf_map import BPF_F_RB_OVERWRITE, has_ringbuf_overwrite
from ringtool.programs.loader import detach_points
from ringtool.readers.perfbuf import PerfBuffer
from ringtool.trace.reading.flight_count import Overwritten, perf_overwritten, ringbuf_overwritten
from ringtool.trace.reading.options import PAGE, RING_SOURCES
from ringtool.trace.reading.session import TraceSession
from ringtool.trace.recorder.flight_net import NetDumps, ts_offset
from ringtool.trace.signals import claimed


def backend() -> str:
    """``"ringbuf"`` where the kernel has RINGBUF overwrite mode, else ``"perf"``."""
    return "ringbuf" if has_ringbuf_overwrite() else "perf"


class FlightSession(TraceSession):
    """The sources of a flight-recording run (see the module doc)."""

    #: set by _setup (a failed setup may close before it ran)
    perf: PerfBuffer | None = None
    _old_usr1: Any = None
    net_overwrite = True

    def _setup(self) -> None:
        size = self.opts.flight_bytes or 1 << 20
        self.backend = backend()
        self._fds: list[int] = []
        self._pending = np.empty(0, dtype=self.layout.event)
        self._dump = False
        # per CPU (perf rings): events up to this ktime were written by an earlier dump
        self._last_ts: dict[int, int] = {}
        self._net_dumps = NetDumps(ts_offset(self.layout.net))
        self._pending_net: list[tuple[int, bytes]] = []
        # perf rings, per CPU: what the dumps wrote, the records too short to be events
        # in the last dump's copy, and the records each ring took, read at the last
        # dump (see ringtool.trace.reading.flight_count)
        self._written: dict[int, int] = {}
        self._damaged: dict[int, int] = {}
        self._outputs: list[int] = []
        self._detached = False  # the sources are detached (stopping)
        self._exact = False  # the last dump was taken with the sources detached
        rings = any(name in RING_SOURCES for name in self.opts.events)
        if self.backend == "ringbuf":
            self.ring_flags = BPF_F_RB_OVERWRITE
            pages = size // PAGE
        else:
            pages = 1  # the RINGBUF group only holds the drop counter and CPU map
            if rings:
                self._open_perf(size, self.layout.event.itemsize)
        # never woken, never read while tracing; a fixed size (no growth)
        self.opts = replace(self.opts, buffer_pages=pages, perf_pages=size // PAGE,
                            wakeup_fill=None, max_buffer_bytes=None)  # fmt: skip
        super()._setup()
        if threading.current_thread() is threading.main_thread():
            self._old_usr1 = signal.signal(signal.SIGUSR1, self._on_usr1)
            # a SIGUSR1 while ringtool started: the first turn of the loop dumps
            self._dump = claimed(self._old_usr1, signal.SIGUSR1)
        self._note(f"flight recorder: {size >> 10} KiB a CPU in the kernel ({self._what()}); "
                   f"kill -USR1 {os.getpid()} writes the newest events")  # fmt: skip

    def _setup_marks(self) -> None:
        """Markers go through the RINGBUF group: kept with the overwrite rings, but with
        the perf rings the group's rings are not the recorder's, so none are taken
        (a marker written there would never be read)."""
        if self.backend == "ringbuf":
            super()._setup_marks()
        else:
            self._note("markers (ringtool mark) are not recorded by a flight recorder "
                       "on this kernel (perf rings)")  # fmt: skip

    def _what(self) -> str:
        net = "; net: perf write_backward rings" if "net" in self.opts.events else ""
        if not any(name in RING_SOURCES for name in self.opts.events):
            return "net: perf write_backward rings"
        if self.backend == "ringbuf":
            return "RINGBUF with BPF_F_RB_OVERWRITE" + net
        return "perf write_backward rings: this kernel has no RINGBUF overwrite mode" + net

    def _open_perf(self, size: int, record: int) -> None:
        ncpu = possible_cpu_count()
        try:
            perf_map = self._own(
                bpf.map_create(
                    bpf.MapType.PERF_EVENT_ARRAY, key_size=4, value_size=4, max_entries=ncpu
                )
            )
            self._scratch = self._own(
                bpf.map_create(
                    bpf.MapType.PERCPU_ARRAY,
                    key_size=4,
                    value_size=(record + 7) & ~7,
                    max_entries=1,
                )
            )
            self._outputs_fd = self._own(
                bpf.map_create(bpf.MapType.PERCPU_ARRAY, key_size=4, value_size=8, max_entries=1)
            )
            self._perf_map = perf_map
            self._record = record
            self.perf = PerfBuffer(perf_map, None, page_cnt=size // PAGE, overwrite=True)
        except BaseException:
            self._close_fds()
            raise

    def _own(self, fd: int) -> int:
        self._fds.append(fd)
        return fd

    def _extra_defines(self) -> dict[str, int | str]:
        if self.perf is None:
            return {}
        return {
            "RT_PCPU_PERF_FD": self._perf_map,
            "RT_PCPU_OUTPUTS_FD": self._outputs_fd,
            "RT_PCPU_SCRATCH_FD": self._scratch,
            "RT_PCPU_SCRATCH_BYTES": self._record,
        }

    # --- the loop's side ---------------------------------------------------------------

    def _on_usr1(self, signum: int, frame: object) -> None:
        self._dump = True

    def stopping(self) -> None:
        """The final dump comes next: the sources are detached first, so nothing is
        written while it is taken and its overwritten count is exact (a source that
        cannot be detached leaves it a lower bound, with a note)."""
        self._dump = True
        try:
            detach_points(list(self.sources.values()))
        except Exception as exc:  # BCC raises bare Exception
            self._note(f"flight recorder: sources not detached before the last dump ({exc}): "
                       "its overwritten count is a lower bound")  # fmt: skip
        else:
            self._detached = True

    def wait(self, timeout_s: float, extra_fds: Sequence[int] = ()) -> list[int]:
        """Wait for a signal (or input) only: the rings are not read while tracing.
        The signal wakeup pipe is emptied here (its bytes carry no meaning)."""
        self.check_cpus()
        try:
            ready, _, _ = select.select(list(extra_fds), [], [], max(0.0, timeout_s))
        except InterruptedError:
            return []
        for fd in ready:
            try:
                os.read(fd, 4096)
            except (BlockingIOError, OSError):
                pass
        return list(ready)

    def ring_fill(self) -> dict[int, float]:
        return {}

    def read_events(self, limit: int | None = None) -> np.ndarray[Any, Any]:
        """Nothing until a dump is asked for (SIGUSR1, the end of the run); then the
        dump, in pieces of at most ``limit`` events."""
        if self._dump:
            self._dump = False
            self._exact = self._detached
            if self.perf is not None:  # before the copies: see ringtool.trace.reading.flight_count
                self._outputs = bpf.percpu_u64(self._outputs_fd)
            self._pending = np.concatenate([self._pending, self._take()])
            if self.net is not None:
                self._pending_net += self._net_dumps.take(self.net.snapshot())
        n = len(self._pending) if limit is None else min(limit, len(self._pending))
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    @contextmanager
    def lease_events(self, limit: int | None = None) -> Iterator[list[np.ndarray[Any, Any]]]:
        """:meth:`read_events` as one array (a dump is a copy already)."""
        yield [self.read_events(limit)]

    def read_net(self, *, final: bool = False) -> list[tuple[int, bytes]]:
        """The dump's packets (taken by :meth:`read_events`), oldest first; else none
        (``final`` changes nothing: a dump holds nothing back)."""
        out, self._pending_net = self._pending_net, []
        return out

    def _take(self) -> np.ndarray[Any, Any]:
        """The events the kernel holds that no dump wrote yet, in timestamp order.

        Overwrite RINGBUF: the reader consumes what it reads, so a dump never sees an
        event twice. Perf rings: a snapshot copies what each CPU's ring holds, read or
        not, so each CPU keeps the newest timestamp a dump wrote (a CPU's records are
        in its timestamp order) and only newer ones are taken; one watermark across
        CPUs would lose an event one CPU recorded while another's ring was copied."""
        dt = self.layout.event
        arr = np.empty(0, dtype=dt)
        if self.perf is not None:
            parts = []
            self._damaged = {}  # what this copy holds (one found again is not two)
            for cpu, per_cpu in self.perf.snapshot().items():
                recs = [r[: dt.itemsize] for r in per_cpu if len(r) >= dt.itemsize]
                if len(recs) < len(per_cpu):
                    self._damaged[cpu] = len(per_cpu) - len(recs)
                if not recs:
                    continue
                got = np.frombuffer(b"".join(recs), dtype=dt)
                got = got[got["h"]["ts"] > self._last_ts.get(cpu, 0)]
                if len(got):
                    self._last_ts[cpu] = int(got["h"]["ts"].max())
                    self._written[cpu] = self._written.get(cpu, 0) + len(got)
                    parts.append(got)
            if parts:
                arr = np.concatenate(parts)
        elif self.rb is not None:
            arr = self.rb.read_batch(dt)
        arr = arr[np.argsort(arr["h"]["ts"], kind="stable")]
        return arr.copy()

    def overwritten(self) -> Overwritten | None:
        """Events the rings overwrote before a dump wrote them, as of the last dump
        (:mod:`ringtool.trace.reading.flight_count`): exact after the final dump of sources
        detached before it, else a lower bound. The net source's packets are not
        counted (its programs keep no count): with it, a lower bound too."""
        exact = self._exact and self.net is None
        if self.perf is not None:
            return perf_overwritten(self._outputs, self._written, self._damaged, exact=exact)
        if self.rb is not None:
            span = (self.layout.event.itemsize + 8 + 7) & ~7  # header + record, 8-aligned
            return ringbuf_overwritten(self.rb.overwritten(), self.rb.overwritten_uncounted_bytes(),
                                       span, exact=exact)  # fmt: skip
        return Overwritten()

    def close(self) -> None:
        if self._old_usr1 is not None:
            signal.signal(signal.SIGUSR1, self._old_usr1)
            self._old_usr1 = None
        try:
            super().close()
        finally:
            if self.perf is not None:
                self.perf.close()
            self._close_fds()

    def _close_fds(self) -> None:
        while vars(self).get("_fds"):
            bpf.close_fd(self._fds.pop())


__all__ = ["FlightSession", "backend"]
