"""The ``ringtool trace`` loop: read the sources, count, output, end cleanly.

:func:`run_trace` loads the sources (:class:`~ringtool.trace.reading.session.TraceSession`),
then until ``duration`` passes, Ctrl-C/SIGTERM, or the TUI's ``q``: waits for data,
reads every ring in one vectorised batch, feeds :class:`~ringtool.trace.report.stats.TraceStats`,
the output and the sinks (:mod:`ringtool.trace.sink`), and once per ``interval``
takes the kernel counters (drops, lost, syscall histograms) and emits a stats line /
redraws. At the end it drains what is left, takes the counters a last time, writes the
summary and detaches everything — also when the output raised.

A stop signal that came during start-up (:class:`~ringtool.trace.signals.StartSignals`)
ends the run before its loop's first turn: the sources were attached and detached at
once, so the run says :data:`STOPPED_AT_START` as a note, measures no cost (a CPU
share over milliseconds of start-up would read as ringtool's), and the text outputs
(dashboard, columns, CSV) print no summary when nothing was counted. ``--json`` and
``--quiet`` still end with their summary (the documented last line, events 0).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO, cast

import numpy as np

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import NO_PACKETS, Records
from ringtool.event.safe_text import printable
from ringtool.event.syscalls import syscall_namer
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.trace.batches import pieces
from ringtool.trace.held_writes import HeldWrites
from ringtool.trace.outputs import RunConfig, close_sinks, make_output, open_sinks
from ringtool.trace.reading.cost import CostSampler
from ringtool.trace.reading.cpuwait_maps import read_waits
from ringtool.trace.reading.filters import NameFilter
from ringtool.trace.reading.hist_maps import disk_hists
from ringtool.trace.reading.ordered import OrderedReader
from ringtool.trace.reading.session import TraceOptions, TraceSession
from ringtool.trace.reading.tcp_conns import open_conns
from ringtool.trace.reading.tcp_maps import read_conns, read_proc_io
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.signals import StopSignals
from ringtool.trace.sink import Drill, Output, Sink

#: Records read per batch at most (bounds latency of one loop turn under load).
BATCH = 65536
#: The note of a run stopped by a signal during start-up, before it read anything.
STOPPED_AT_START = "stopped during start-up (a stop signal came before tracing began)"
#: The outputs whose summary is data a reader expects as the last line.
SUMMARY_ALWAYS = frozenset({"json", "quiet"})


@dataclass(frozen=True)
class RunParts:
    """The classes a run is built from; the defaults are the product's. ``ringtool
    bench trace`` passes subclasses that report when the sources are attached, keep
    the stats, or render the dashboard without a terminal."""

    session: type[TraceSession] = TraceSession
    stats: type[TraceStats] = TraceStats
    output: Callable[[RunConfig, Decoder, TextIO], Output[TraceStats]] = make_output


def run_trace(
    opts: TraceOptions,
    cfg: RunConfig,
    stream: TextIO | None = None,
    parts: RunParts | None = None,
) -> int:
    """Trace until the end condition; returns the exit status (0)."""
    # what the outputs write while the loop holds a read waits until it is consumed
    held = HeldWrites(stream or sys.stdout)
    stream = cast(TextIO, held)  # the stream's interface: writes, and the rest passed on
    parts = parts or RunParts()
    layout = load_layout()
    namer = syscall_namer()
    decoder = Decoder(layout, namer)
    early_notes: list[str] = []
    # the sinks first: a --pcap that cannot be written fails before any BPF load
    sinks = open_sinks(cfg, opts.snaplen, decoder, possible_cpu_count())
    out = parts.output(cfg, decoder, stream)
    early = cfg.mode == "tui"  # the dashboard shows the start-up (BCC compiles: seconds)
    notes: list[str] = []
    try:
        with StopSignals() as stop:
            session_cls = parts.session
            if opts.flight_bytes is not None:
                from ringtool.trace.recorder.flight import FlightSession

                session_cls = FlightSession
            if early:
                out.open()
            session = session_cls(opts, layout, on_note=early_notes.append, attach=False,
                                  on_step=out.step)  # fmt: skip
            notes = session.notes
            try:
                _loop(session, stop, cfg, decoder, held, sinks, parts, out)
            finally:
                session.close()
    finally:
        if early:
            out.close()  # a no-op when the loop closed it
            for note in notes:  # after the dashboard: the notes stay on the terminal
                print(f"ringtool trace: {printable(note)}", file=sys.stderr)
        close_sinks(sinks, None)  # a no-op when the loop closed them
    return 0


def _loop(
    session: TraceSession,
    stop: StopSignals,
    cfg: RunConfig,
    decoder: Decoder,
    held: HeldWrites,
    sinks: list[Sink[TraceStats]],
    parts: RunParts,
    out: Output[TraceStats],
) -> None:
    stream = cast(TextIO, held)
    stats = parts.stats(decoder.types, possible_cpu_count(), session.active,
                        decoder.syscall_name)  # fmt: skip
    input_fd = out.input_fd
    extra_fds = [stop.fileno(), *([input_fd] if input_fd >= 0 else [])]
    if cfg.mode == "quiet":  # the others tell their notes on stderr at start (tui: at end)
        for note in session.notes:
            print(f"ringtool trace: {printable(note)}", file=sys.stderr)
    ordered = session.ordered_reader(cfg.window_us) if cfg.ordered else None
    mark = session.layout.type_id("mark")  # -n keeps every marker
    keep = NameFilter(cfg.name, always=mark) if cfg.name is not None else None
    out.open()
    cost: CostSampler | None = None
    try:
        # attached now, read from the loop's first turn; the start line (what callers
        # wait for before they make events) comes after the attach
        stats.begin(session.start())
        # the kernel's BPF run-time statistics: on while wanted, off by the finally below
        cost = CostSampler(session.prog_fds(), on=_wants_cost(cfg, out),
                           off="--no-cost" if cfg.cost is False else None,
                           hint="key c, the cost panel, turns them on while open"
                           if cfg.mode == "tui" else "--cost turns them on")  # fmt: skip
        out.start(session.active, session.notes)
        if cfg.cost and cost.note is not None:
            out.note(f"cost: {cost.note}")
        session.on_note = out.note  # later notes (CPU hotplug) go to the output
        at_start = stop.stopped  # a stop signal during start-up: the loop never turns
        start = time.monotonic()
        deadline = None if cfg.duration is None else start + cfg.duration
        next_tick = start + cfg.interval
        quit_ = False
        while not (quit_ or stop.stopped):
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            until = min(next_tick, deadline) if deadline is not None else next_tick
            ready = session.wait(until - now, extra_fds)
            if input_fd >= 0 and input_fd in ready:
                quit_ = out.handle_input()
                cost.turn(_wants_cost(cfg, out))  # the cost panel opened or closed
            _ingest(session, stats, out, sinks, decoder, ordered, held, keep=keep)
            if time.monotonic() >= next_tick:
                _tick(session, stats, ordered, drill=out.drill, conns=out.wants_conns)
                stats.cost = cost.sample()
                for sink in sinks:
                    for note in sink.tick(stats):
                        out.note(note)
                out.stats(stats)
                next_tick += cfg.interval * max(
                    1, int((time.monotonic() - next_tick) / cfg.interval) + 1
                )
        if session.marks is not None:  # a marker confirmed from here on would be lost:
            session.marks.close()  # none is (trace/reading/marks.py), every one before is read
        session.finish_rings()  # a ring switch in flight: sealed, so read to its end
        session.stopping()
        _ingest(session, stats, out, sinks, decoder, ordered, held, final=True, keep=keep)
        _tick(session, stats, ordered, drill=out.drill)
        stats.cost = None if at_start else cost.sample()
        if stats.interval_dropped:
            out.stats(stats)  # the last, partial interval: every drop has its stats line
        stats.end = time.monotonic()  # one duration in every summary (sinks', output's)
    finally:
        if cost is not None:
            cost.close()  # the statistics off again: q, Ctrl-C, SIGTERM and errors alike
        out.close()
        close_sinks(sinks, stats)
    if at_start:
        if cfg.mode == "tui":  # closed: its notes are printed after it (run_trace)
            session.notes.append(STOPPED_AT_START)
        else:
            out.note(STOPPED_AT_START)
        if cfg.mode not in SUMMARY_ALWAYS and not (stats.total or stats.dropped or stats.lost):
            return
    out.summary(stats)
    if cfg.hist:
        _print_hist(stats, json_lines=cfg.mode == "json", stream=stream)


def _wants_cost(cfg: RunConfig, out: Output[TraceStats]) -> bool:
    """The kernel's BPF run-time statistics on now: ``--cost`` or ``--no-cost`` decide,
    else the output (the dashboard while its cost panel is open)."""
    return cfg.cost if cfg.cost is not None else out.wants_cost


def _tick(
    session: TraceSession,
    stats: TraceStats,
    ordered: OrderedReader | None = None,
    drill: Drill | None = None,
    conns: bool = False,
) -> None:
    """Take the kernel counters into ``stats``; ``drill``: the processes whose
    syscall histograms and open connections are read too (the TUI's drill-down;
    None: nobody); ``conns``: the tcp source's open connections are read too (the
    TUI's connections panel)."""
    if ordered is not None:
        stats.set_ordering(ordered.merger.stats)
    stats.rings = session.rings_record()
    tcp = session.sources.get("tcp")
    stats.tick(
        drops_cpu=session.dropped_per_cpu(),
        drops_source=session.dropped_per_source(),
        lost_cpu=session.lost_per_cpu(),
        overwritten=session.overwritten(),
        syscall_hist=session.syscall_hist(),
        disk_hist=disk_hists(session.sources.get("disk")),
        drill=(None, {}) if drill is None else (drill[0], session.proc_hist(drill[1])),
        cpuwait=read_waits(obj) if (obj := session.sources.get("cpuwait")) else None,
        tcp_open=open_conns(tcp, session.layout) if conns and tcp else None,
        tcp_io=read_proc_io(tcp) if tcp else None,
        drill_conns=read_conns(tcp, session.layout, drill[1])
        if tcp and drill is not None
        else None,
    )


def _print_hist(stats: TraceStats, *, json_lines: bool, stream: TextIO) -> None:
    """``--hist``: the histograms after the summary (JSON: one object per syscall)."""
    from ringtool.trace.report import cpuwait
    from ringtool.trace.report.hist import hist_lines, hist_records

    waits = stats.cpuwait
    if json_lines:
        import json

        for record in hist_records(stats):
            stream.write(json.dumps(record) + "\n")
        for record in cpuwait.hist_records(waits) if waits is not None else ():
            stream.write(json.dumps(record) + "\n")
    else:
        for line in hist_lines(stats):
            stream.write(line + "\n")
        for line in cpuwait.hist_lines(waits) if waits is not None else ():
            stream.write(line + "\n")
    stream.flush()


def _ingest(
    session: TraceSession,
    stats: TraceStats,
    out: Output[TraceStats],
    sinks: list[Sink[TraceStats]],
    decoder: Decoder,
    ordered: OrderedReader | None,
    held: HeldWrites,
    *,
    final: bool = False,
    keep: NameFilter | None = None,
) -> None:
    """Read what the rings hold (at most 64 reads of :data:`BATCH`: never starve the
    ticks under a flood) and hand it on to the stats, the output and the sinks, in
    pieces (:func:`ringtool.trace.batches.pieces`) that are mostly views of the mapped
    rings: each is valid during those calls only (whoever keeps records copies them),
    and the read is consumed after them; what the output writes meanwhile is written
    after that (``held``: a blocked write never keeps ring space from the producer)."""
    stats.observe_fill(session.ring_fill())
    for _ in range(64):
        with held.hold(), _records(session, ordered, final) as arrays:
            got = sum(len(a) for a in arrays)
            raw_net = session.read_net(final=final)
            net = decoder.net_records(raw_net) if raw_net else NO_PACKETS
            stats.malformed = decoder.malformed
            if got == 0 and not len(net):
                return
            batch = list(pieces(arrays)) or [np.empty(0, dtype=session.layout.event)]
            for i, arr in enumerate(batch):
                if keep is not None:
                    arr = keep.keep(arr)  # -n: after the ring (its drops were counted before)
                records = Records(arr, net if i == len(batch) - 1 else NO_PACKETS)  # net: last
                stats.add_batch(arr)
                stats.add_net(records.net)
                out.batch(records)
                for sink in sinks:
                    sink.publish(records)
        if got < BATCH and not final:
            return


@contextmanager
def _records(
    session: TraceSession, ordered: OrderedReader | None, final: bool
) -> Iterator[list[np.ndarray[Any, Any]]]:
    """One read: the ordered reader's merged batch, else the session's lease."""
    if ordered is not None:
        yield [ordered.read(BATCH, final=final)]
        return
    with session.lease_events(BATCH) as arrays:
        yield arrays


__all__ = ["BATCH", "RunConfig", "RunParts", "make_output", "run_trace"]
