"""Load the trace sources (``bpf/trace_*.c``) and read what they produce.

:class:`TraceSession` owns everything the kernel side needs and undoes it on
``close()`` (also after a failed setup):

* one per-CPU RINGBUF group (:class:`ringtool.readers.ringbuf_group.RingBufGroup`,
  one ring per CPU of ``buffer_pages`` pages) that every RINGBUF source writes
  ``struct trace_event`` records into, read by one :class:`ringtool.RingBuffer`;
* one BCC program per enabled source (``exec``, ``open``, ``syscalls``) — a source
  the kernel refuses is left out with a note in :attr:`TraceSession.notes`, the
  others keep running;
* the ``net`` source (:mod:`ringtool.trace.reading.net`) over a PERF_EVENT_ARRAY when asked;
* the rings' growth (:mod:`ringtool.trace.reading.ring_growth`): with ``max_buffer_bytes`` a
  CPU's ring that drops or fills up moves to a bigger one while tracing, and back
  down when idle; its notes go to ``on_note``.

Start-up: the constructor compiles and loads every program (seconds with BCC) and
attaches the RINGBUF sources' tracepoints only when all are loaded; with
``attach=False`` only in :meth:`TraceSession.start`, which the caller invokes once it
is ready to read (``ringtool trace`` does). So the rings do not fill (and drop) while
the other sources compile and the output starts: a drop counted is a real one.

Constants (which filters are on, sizes, the group's map fds) reach the C code as
``-D`` cflags, run-time values through a config map (the program cache can keep the
programs: :mod:`ringtool.trace.reading.source_loading`).
"""

from __future__ import annotations

import functools
import select
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ringtool.errors import KernelFeatureError, RingtoolError
from ringtool.event.layout import TraceLayout
from ringtool.kernel import bpf
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.programs.loaded import LoadedProgram
from ringtool.programs.loader import attach_programs, detach_all
from ringtool.readers.args import check_limit
from ringtool.readers.ringbuf import RingBuffer
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.trace.reading import source_loading as loading
from ringtool.trace.reading import tcp_owners
from ringtool.trace.reading.cost import program_fds
from ringtool.trace.reading.flight_count import Overwritten
from ringtool.trace.reading.hist_maps import Hists, SyscallHists
from ringtool.trace.reading.marks import MarkSource, check_user_ringbuf
from ringtool.trace.reading.options import ALL_EVENTS, PAGE, RING_SOURCES, TraceOptions
from ringtool.trace.reading.ordered import OrderedReader
from ringtool.trace.reading.pacing import BatchPacer
from ringtool.trace.reading.parents import seed_parents
from ringtool.trace.reading.ring_growth import RingGrowth


class TraceSession:
    """The loaded sources of one ``ringtool trace`` run (see the module doc).

    ``on_note(text)`` is told about every source that had to be disabled and, while
    running, every CPU hotplug change (the runner points it at the output).
    ``on_step(text)`` is told what start-up does next (``compiling bpf/trace_open.c``,
    ``attaching``): the dashboard shows it while BCC compiles.
    """

    def __init__(
        self,
        opts: TraceOptions,
        layout: TraceLayout,
        on_note: Callable[[str], None] | None = None,
        *,
        attach: bool = True,
        on_step: Callable[[str], None] | None = None,
    ) -> None:
        self.opts = opts
        self.on_step = on_step
        self.layout = layout
        self.notes: list[str] = []
        self.on_note = on_note
        self.sources: dict[str, LoadedProgram] = {}  # BCC's or the program cache's
        self.origins: dict[str, str] = {}  # name -> "cache" or "compiled" (by BCC)
        self.config_fd = -1  # the config map (bpf/trace_event.h TRACE_CONFIG_FD)
        self.owners_fd = -1  # net and tcp: TCP connections' owners (tcp_owners.py)
        self.group: RingBufGroup | None = None
        self.rb: RingBuffer | None = None
        self.growth: RingGrowth | None = None
        self.net: Any = None
        self.marks: MarkSource | None = None  # ringtool mark's ring (see _setup_marks)
        self.hists: SyscallHists | None = None  # the syscalls source's (see _hists)
        self._pacer = BatchPacer(self._fullest, opts.max_latency_s, lambda: self.rb)
        try:
            self._setup()
            if attach:
                self.start()
        except BaseException:
            self.close()
            raise

    def _step(self, text: str) -> None:
        if self.on_step is not None:
            self.on_step(text)

    #: map flags of the RINGBUF group's rings (a flight recorder sets overwrite mode)
    ring_flags = 0
    #: the net source's perf buffers in write_backward mode (a flight recorder)
    net_overwrite = False

    def _extra_defines(self) -> dict[str, int | str]:
        """More ``-D`` constants for the RINGBUF sources (a subclass's; none here)."""
        return {}

    def stopping(self) -> None:
        """The run is ending: the last read comes next (a flight recorder dumps)."""

    def _note(self, text: str) -> None:
        self.notes.append(text)
        if self.on_note is not None:
            self.on_note(text)

    def _setup(self) -> None:
        opts = self.opts
        ring_names = [n for n in opts.events if n in RING_SOURCES]
        self.config_fd = loading.make_config(opts)
        if tcp_owners.wanted(opts.events) and opts.iface:
            self.owners_fd = tcp_owners.make_owners()
        owners = tcp_owners.owner_defines(self.owners_fd) if self.owners_fd >= 0 else {}
        if ring_names:
            self.group = RingBufGroup(cpus_per_buffer=1, ring_bytes=opts.buffer_pages * PAGE,
                                      ring_flags=self.ring_flags, fill_later=True)  # fmt: skip
        flags = None if self.group is None else self.group.cflags()
        defines = loading.source_defines(
            opts, self.layout, flags, self.config_fd, self._extra_defines()
        )
        self.sources, self.origins = loading.load_sources(ring_names, defines, opts, self._note,
                                                          self._step, {"tcp": owners})  # fmt: skip
        if "exec" in self.sources:  # the ppid of processes forked before the trace
            seed_parents(self.sources["exec"][b"parent_of"])
        if self.group is not None and self.sources:
            self.group.filled()  # the rings were entered while the programs loaded
            self.rb = self.group.consumer()
            self._setup_marks()
            self.growth = RingGrowth(self.group, self.rb, max_bytes=opts.max_buffer_bytes,
                                     quiet_s=opts.ring_quiet_s, on_note=self._note)  # fmt: skip
        if "net" in opts.events:  # packets name their TCP connection's owner with tcp
            self._setup_net({**defines, **owners} if "tcp" in self.sources else defines)
        if not self.sources and self.net is None:
            raise RingtoolError("no trace source could be loaded: " + "; ".join(self.notes))

    def _setup_marks(self) -> None:
        """Pin a marker ring for ``ringtool mark`` (:mod:`ringtool.trace.reading.marks`); a
        kernel without USER_RINGBUF has no markers, silently; another failure is a note."""
        assert self.group is not None
        try:
            check_user_ringbuf()
        except KernelFeatureError:
            return
        try:
            self.marks = MarkSource(self.group, self.layout, store=loading.program_store(self.opts))
        except (RingtoolError, OSError) as exc:
            self._note(f"markers disabled (ringtool mark): {_first_line(exc)}")

    def _setup_net(self, defines: dict[str, int | str]) -> None:
        if not self.opts.iface:
            self._note("source net disabled: give the interface with -i IFACE")
            return
        from ringtool.trace.reading.net import NetSource

        self._step(f"compiling the net source (TC on {self.opts.iface})")
        try:
            self.net = NetSource(self.opts.iface, self.opts.snaplen, self.opts.perf_pages, defines,
                                 self.layout.net_ts_offset,
                                 overwrite=self.net_overwrite)  # fmt: skip
        except RingtoolError as exc:
            self._note(f"source net disabled: {_first_line(exc)}")
            return
        for note in self.net.notes:
            self._note(f"source net: {note}")
        o = self.opts
        if o.pid is not None or o.comm or o.tid is not None or o.uid is not None or o.cgroup:
            # TC programs run without a task: no pid, comm, uid or cgroup to filter on
            self._note(f"source net: -p/-c/-t/-u/--cgroup do not apply to packets; all of "
                       f"{o.iface} is traced")  # fmt: skip

    def start(self) -> float:
        """Attach the RINGBUF sources' programs (with ``attach=False``: call right
        before reading; again: nothing more); a source the kernel refuses now is closed
        and noted. Returns the time.monotonic() at which they were all attached."""
        self._step(f"attaching {', '.join(self.sources) or 'nothing'}")
        for name, obj in list(self.sources.items()):
            try:
                attach_programs(obj)
            except RingtoolError as exc:
                self._note(f"source {name} disabled: {_first_line(exc)}")
                del self.sources[name]
                detach_all([obj])  # what did attach is detached again
        return time.monotonic()

    # --- reading -----------------------------------------------------------------------

    @property
    def active(self) -> list[str]:
        """Names of the sources that are running."""
        return [*self.sources, *(["net"] if self.net is not None else [])]

    def wait(self, timeout_s: float, extra_fds: Sequence[int] = ()) -> list[int]:
        """Block until a source (or one of ``extra_fds``) is readable or ``timeout_s``
        passes; returns the readable fds. With adaptive wakeups a ring below its
        threshold wakes nobody, so this returns after ``max_latency_s`` at the latest:
        the caller reads after every return (a poll) and no record waits longer.

        Each call also follows CPU hotplug (:meth:`check_cpus`: cheap, the online list
        is read at most once per second); changes reach ``on_note``. And it moves
        rings that drop or fill to bigger ones (:mod:`ringtool.trace.reading.ring_growth`).
        It returns in time for a net sample held back for ordering to go out
        (:mod:`ringtool.trace.reading.net_order`: about a millisecond after its stamp)."""
        self.check_cpus()
        if self.growth is not None:
            self.growth.check()
        if self.net is not None and (due := self.net.release_in()) is not None:
            timeout_s = min(timeout_s, due)  # net samples held for ordering go out on time
        if self.rb is not None and self.opts.wakeup_fill is not None:
            timeout_s = min(timeout_s, self.opts.max_latency_s)
            ready = self._pacer.pause(timeout_s, extra_fds)  # see ringtool.trace.reading.pacing
            if ready is not None:
                return ready
        fds = list(extra_fds)
        if self.rb is not None:
            fds.append(self.rb.epoll_fd())
        if self.net is not None:
            fds.append(self.net.fileno())
        try:
            ready, _, _ = select.select(fds, [], [], max(0.0, timeout_s))
        except InterruptedError:
            return []
        return list(ready)

    def check_cpus(self) -> None:
        """Notice CPUs that went offline (their rings are read until empty) or came
        online (rings opened for them); one note per change."""
        notes = self.group.check_cpus() if self.group is not None and self.rb else []
        if self.net is not None:
            notes += [f"net: {n}" for n in self.net.check_cpus()]
        for text in notes:
            self._note(text)

    def ordered_reader(self, window_us: float | None) -> OrderedReader | None:
        """A timestamp-ordered reader over the per-CPU rings (``--ordered``)."""
        if self.rb is None:
            return None
        resizer = None if self.growth is None else self.growth.resizer
        return OrderedReader(self.rb, self.layout.event, window_us, resizer)

    def read_events(self, limit: int | None = None) -> np.ndarray[Any, Any]:
        """The available RINGBUF records as a ``struct trace_event`` array of their own
        (consumed): :meth:`lease_events`' arrays, copied into one."""
        with self.lease_events(limit) as arrays:
            return np.concatenate(arrays) if arrays else np.empty(0, dtype=self.layout.event)

    @contextmanager
    def lease_events(self, limit: int | None = None) -> Iterator[list[np.ndarray[Any, Any]]]:
        """The available RINGBUF records as ``struct trace_event`` arrays, most of them
        views of the mapped rings (no copy): valid inside the ``with`` block only, and
        consumed when it ends (see :meth:`RingGrowth.lease_batch`); copy what must
        outlive it. Ring order, then record order (a ring being replaced: its old ring
        first)."""
        if self.rb is None or self.growth is None:
            yield []
            return
        self.growth.fills()  # the fill the reader finds: what the growth policy sees
        with self.growth.lease_batch(self.layout.event, check_limit("limit", limit)) as arrays:
            yield arrays
        self._pacer.read_done()

    def finish_rings(self) -> None:
        """Before the last read: the rings stop growing and every switch in flight is
        sealed (milliseconds), so that read reads old and new rings to their end."""
        if self.growth is not None:
            self.growth.finish()

    def read_net(self, *, final: bool = False) -> list[tuple[int, bytes]]:
        """The available net samples as ``(cpu, raw sample)`` (consumed), in timestamp
        order (some may wait for a later read; ``final``: the last read, all of them)."""
        return [] if self.net is None else self.net.read(final=final)

    def prog_fds(self) -> dict[str, int]:
        """Every loaded BPF program of the running sources: ``"source event"`` (the
        tracepoint ``category:event``, or the function's name) -> its fd, open until
        :meth:`close` (what :class:`ringtool.trace.reading.cost.CostSampler` reads)."""
        net = {} if self.net is None else self.net.prog_fds()
        return program_fds(self.sources, {f"net {name}": fd for name, fd in net.items()})

    # --- counters ----------------------------------------------------------------------

    def _ring_fills(self) -> list[float]:
        """Per RINGBUF ring (by ring id): how full it is now, 0..1."""
        return [] if self.growth is None else self.growth.fills()

    def _fullest(self) -> float:
        """The fill (0..1) of the fullest ring (the pacer's measure)."""
        return max(self._ring_fills(), default=0.0)

    def ring_fill(self) -> dict[int, float]:
        """Per CPU: how full its ring is now, 0..1."""
        out: dict[int, float] = {}
        if self.rb is None or self.group is None:
            return out
        for bid, frac in enumerate(self._ring_fills()):
            for cpu in self.group.layout.cpus_of(bid):
                out[cpu] = frac
        if self.net is not None:
            for cpu, frac in self.net.fill().items():
                out[cpu] = max(out.get(cpu, 0.0), frac)
        return out

    def dropped_per_cpu(self) -> list[int]:
        """Failed RINGBUF reservations per CPU, all sources."""
        return self.group.dropped() if self.group is not None else []

    def dropped_per_source(self) -> dict[str, list[int]]:
        """Per source, its failed outputs per CPU: each RINGBUF source's own ``drops``
        array; for net the perf buffers' PERF_RECORD_LOST counts."""
        out = {name: bpf.percpu_u64(obj[b"drops"].map_fd) for name, obj in self.sources.items()}
        if self.net is not None:
            lost = self.net.lost()
            out["net"] = [lost.get(cpu, 0) for cpu in range(possible_cpu_count())]
        return out

    def rings_record(self) -> dict[str, Any] | None:
        """The RINGBUF rings' sizes and switches (:meth:`RingGrowth.record`), or None."""
        return None if self.growth is None else self.growth.record()

    def lost_per_cpu(self) -> dict[int, int]:
        """Perf samples lost per CPU (net source; PERF_RECORD_LOST totals)."""
        return {} if self.net is None else self.net.lost()

    def overwritten(self) -> Overwritten | None:
        """Events the rings overwrote before they were read: None here (the reader
        keeps up or the producer fails: a drop); a flight recorder's count."""
        return None

    def syscall_hist(self) -> Hists:
        """Cumulative latency histograms: syscall nr -> {bucket: count} (log-linear
        buckets of ns, :mod:`ringtool.trace.reading.latency_buckets`); {} without the source."""
        return {} if (h := self._hists()) is None else h.cumulative()

    def proc_hist(self, pids: Collection[int]) -> Hists:
        """The processes ``pids``' histograms since the start of the trace, added up,
        as :meth:`syscall_hist`'s ({} without the source or without pids)."""
        return {} if (h := self._hists()) is None else h.per_process(pids)

    def _hists(self) -> SyscallHists | None:
        if self.hists is None and "syscalls" in self.sources:
            self.hists = SyscallHists(self.sources["syscalls"], self._note)
        return self.hists

    def close(self) -> None:
        """Detach and free everything (idempotent; each step on its own)."""
        closers: list[Callable[[], Any]] = []
        if self.hists is not None:
            closers.append(self.hists.close)
        if self.marks is not None:
            closers.append(self.marks.close)
        if self.growth is not None:
            closers.append(self.growth.close)  # before the consumer: it waits for a switch
        if self.rb is not None:
            closers.append(self.rb.close)
        if self.net is not None:
            closers.append(self.net.close)
        objs = list(self.sources.values())
        closers.append(lambda: detach_all(objs))  # tracepoints closed concurrently
        if self.group is not None:
            closers.append(self.group.close)
        for fd in (self.config_fd, self.owners_fd):
            if fd >= 0:
                closers.append(functools.partial(bpf.close_fd, fd))
        for closer in closers:
            try:
                closer()
            except Exception:  # best effort: go on with the rest
                pass
        self.rb = None
        self.growth = None
        self.net = None
        self.marks = None
        self.hists = None
        self.sources = {}
        self.group = None
        self.config_fd = self.owners_fd = -1


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


__all__ = ["ALL_EVENTS", "RING_SOURCES", "TraceOptions", "TraceSession"]
