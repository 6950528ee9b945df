"""The ``ringtool trace`` loop: read the sources, count, output, end cleanly.

:func:`run_trace` loads the sources (:class:`~ringtool.trace.sources.TraceSession`),
then until ``duration`` passes, Ctrl-C/SIGTERM, or the TUI's ``q``: waits for data,
reads every ring in one vectorised batch, feeds :class:`~ringtool.trace.stats.TraceStats`
and the output, and once per ``interval`` takes the kernel counters (drops, lost,
syscall histograms) and emits a stats line / redraws. At the end it drains what is
left, takes the counters a last time, writes the summary and detaches everything —
also when the output raised.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from ringtool.errors import RingtoolError
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.trace.events import Decoder, Event
from ringtool.trace.filters import NameFilter
from ringtool.trace.layout import load_layout
from ringtool.trace.safe_text import printable
from ringtool.trace.sources import TraceOptions, TraceSession
from ringtool.trace.stats import TraceStats

#: Records read per batch at most (bounds latency of one loop turn under load).
BATCH = 65536


class Output(Protocol):
    """What the loop drives: JSON lines, columns, or the TUI."""

    def start(self, sources: list[str], notes: list[str]) -> None: ...
    def batch(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None: ...
    def stats(self, stats: TraceStats) -> None: ...
    def summary(self, stats: TraceStats) -> None: ...
    def note(self, text: str) -> None: ...


class Interactive(Protocol):
    """An output that reads keys (the TUI): ``input_fd`` to wait on, ``handle_input``
    returns True when the user asked to quit."""

    input_fd: int

    def handle_input(self) -> bool: ...


@dataclass(frozen=True)
class RunConfig:
    """How to run: ``mode`` is ``json``, ``csv``, ``columns`` or ``tui``; ``duration`` in seconds
    (None: until Ctrl-C); ``ordered``/``window_us`` merge the per-CPU rings by
    timestamp; ``pcap`` writes net packets as pcapng; ``kmes`` publishes events to a
    KMES bridge socket; ``width`` is the line width of ``columns``."""

    mode: str = "columns"
    duration: float | None = None
    interval: float = 1.0
    ordered: bool = False
    window_us: float | None = None
    pcap: Path | None = None
    kmes: str | None = None
    #: ``columns``: cut lines to this many characters (None: never cut)
    width: int | None = 80
    #: ``--hist``: each syscall's latency histogram after the summary
    hist: bool = False
    #: ``--export``/``--metrics``: a ringtool.export.trace_hook.HookOptions, or None
    export: Any = None
    #: ``-n``: a compiled ``re.Pattern`` the comm must match (user space, after the
    #: ring: :class:`ringtool.trace.filters.NameFilter`), or None
    name: Any = None
    #: ``--fields``: the event fields to output, in this order (json, csv, columns)
    fields: tuple[str, ...] | None = None


def _syscall_namer() -> Callable[[int], str]:
    try:
        from bcc.syscall import syscall_name
    except ImportError:
        return lambda nr: f"sys_{nr}"
    cache: dict[int, str] = {}

    def name(nr: int) -> str:
        if nr not in cache:
            try:
                cache[nr] = syscall_name(nr).decode()
            except Exception:
                cache[nr] = f"sys_{nr}"
        return cache[nr]

    return name


class _StopSignals:
    """SIGINT/SIGTERM set :attr:`stopped` instead of raising, and wake the loop's
    ``select`` through ``signal.set_wakeup_fd`` (:meth:`fileno`): the loop ends
    between batches, so the summary always matches what was written. Only installed
    from the main thread (elsewhere signals keep their handlers)."""

    def __init__(self) -> None:
        self.stopped = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._old: dict[int, Any] = {}
        self._old_fd = -1

    def _handler(self, signum: int, frame: Any) -> None:
        self.stopped = True

    def fileno(self) -> int:
        return self._r

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handler)
            self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old:
            signal.set_wakeup_fd(self._old_fd)
            for sig, handler in self._old.items():
                signal.signal(sig, handler)
        os.close(self._r)
        os.close(self._w)


def make_output(cfg: RunConfig, decoder: Decoder, stream: TextIO) -> Output:
    if cfg.mode == "json":
        from ringtool.trace.output_json import JsonOutput

        return JsonOutput(stream, decoder, cfg.fields)
    if cfg.mode == "csv" or (cfg.mode == "columns" and cfg.fields):
        from ringtool.trace.output_fields import CsvOutput, FieldColumnOutput

        if cfg.mode == "csv":
            return CsvOutput(stream, decoder, cfg.fields)
        return FieldColumnOutput(stream, decoder, cfg.fields or (), width=cfg.width)
    if cfg.mode == "quiet":
        from ringtool.export.quiet import QuietOutput

        return QuietOutput(stream)
    if cfg.mode == "tui":
        from ringtool.trace.tui import TraceTui

        return TraceTui(decoder, interval=cfg.interval)
    from ringtool.trace.output_columns import ColumnOutput

    return ColumnOutput(stream, decoder, width=cfg.width)


def run_trace(opts: TraceOptions, cfg: RunConfig, stream: TextIO | None = None) -> int:
    """Trace until the end condition; returns the exit status (0)."""
    stream = stream or sys.stdout
    layout = load_layout()
    namer = _syscall_namer()
    decoder = Decoder(layout, namer)
    early_notes: list[str] = []
    # the sinks first: a --pcap that cannot be written fails before any BPF load
    extras = _Extras(cfg, opts.snaplen, decoder)
    try:
        with _StopSignals() as stop:
            session = TraceSession(opts, layout, on_note=early_notes.append, attach=False)
            try:
                _loop(session, stop, cfg, decoder, namer, stream, extras)
            finally:
                session.close()
    finally:
        extras.close()  # a no-op when the loop closed them
    return 0


def _loop(
    session: TraceSession,
    stop: _StopSignals,
    cfg: RunConfig,
    decoder: Decoder,
    namer: Callable[[int], str],
    stream: TextIO,
    extras: _Extras,
) -> None:
    stats = TraceStats(decoder.types, possible_cpu_count(), session.active, namer)
    out = make_output(cfg, decoder, stream)
    input_fd: int = getattr(out, "input_fd", -1)
    extra_fds = [stop.fileno(), *([input_fd] if input_fd >= 0 else [])]
    if cfg.mode in ("tui", "quiet"):  # the others tell their notes on stderr at start
        for note in session.notes:
            print(f"ringtool trace: {printable(note)}", file=sys.stderr)
    ordered = session.ordered_reader(cfg.window_us) if cfg.ordered else None
    keep = NameFilter(cfg.name) if cfg.name is not None else None
    enter = getattr(out, "__enter__", None)
    exit_ = getattr(out, "__exit__", None)
    if enter is not None:
        enter()
    try:
        # attached now, read from the loop's first turn; the start line (what callers
        # wait for before they make events) comes after the attach
        stats.begin(session.start())
        out.start(session.active, session.notes)
        session.on_note = out.note  # later notes (CPU hotplug) go to the output
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
                quit_ = _interactive(out).handle_input()
            _ingest(session, stats, out, extras, ordered, keep=keep)
            if time.monotonic() >= next_tick:
                _tick(session, stats, ordered, drill=getattr(out, "drill_pid", None))
                for note in extras.tick(stats):
                    out.note(note)
                out.stats(stats)
                next_tick += cfg.interval * max(
                    1, int((time.monotonic() - next_tick) / cfg.interval) + 1
                )
        _ingest(session, stats, out, extras, ordered, final=True, keep=keep)
        _tick(session, stats, ordered, drill=getattr(out, "drill_pid", None))
        if stats.dropped_interval or stats.lost_interval:
            out.stats(stats)  # the last, partial interval: every drop has its stats line
    finally:
        if exit_ is not None:
            exit_(None, None, None)
        extras.close(stats)
    out.summary(stats)
    if cfg.hist:
        _print_hist(stats, json_lines=cfg.mode == "json", stream=stream)


def _interactive(out: Output) -> Interactive:
    return out  # type: ignore[return-value]  # only outputs with an input_fd get here


def _tick(
    session: TraceSession, stats: TraceStats, ordered: Any = None, drill: int | None = None
) -> None:
    """Take the kernel counters into ``stats``; ``drill``: the process whose syscalls
    are also counted per process (the TUI's drill-down; None: nobody)."""
    session.set_drill(drill)
    if ordered is not None:
        stats.set_ordering(ordered.merger.stats)
    stats.tick(
        drops_cpu=session.dropped_per_cpu(),
        drops_source=session.dropped_per_source(),
        lost_cpu=session.lost_per_cpu(),
        syscall_hist=session.syscall_hist(),
        drill=(drill, session.drill_hist()),
    )


def _print_hist(stats: TraceStats, *, json_lines: bool, stream: TextIO) -> None:
    """``--hist``: the histograms after the summary (JSON: one object per syscall)."""
    from ringtool.trace.hist import hist_lines, hist_records

    if json_lines:
        import json

        for record in hist_records(stats):
            stream.write(json.dumps(record) + "\n")
    else:
        for line in hist_lines(stats):
            stream.write(line + "\n")
    stream.flush()


def _ingest(
    session: TraceSession,
    stats: TraceStats,
    out: Output,
    extras: _Extras,
    ordered: Any,
    *,
    final: bool = False,
    keep: NameFilter | None = None,
) -> None:
    stats.observe_fill(session.ring_fill())
    for _ in range(64):  # bounded: never starve the ticks under a flood
        if ordered is not None:
            arr = ordered.read(BATCH, final=final)
        else:
            arr = session.read_events(BATCH)
        got = len(arr)
        if keep is not None:
            arr = keep.keep(arr)  # -n: after the ring (its drops were counted before)
        raw_net = session.read_net()
        net = decoder_net(extras.decoder, raw_net)
        stats.malformed = extras.decoder.malformed
        if got == 0 and not net:
            return
        stats.add_batch(arr)
        stats.add_events(net)
        out.batch(arr, net)
        extras.publish(arr, net)
        if got < BATCH and not final:
            return


def decoder_net(decoder: Decoder, raw: list[tuple[int, bytes]]) -> list[Event]:
    return decoder.decode_net(raw) if raw else []


class _Extras:
    """Optional sinks: ``--pcap`` (net packets) and ``--kmes`` (every record), opened
    before the sources load. A ``--pcap`` that cannot be created or written is a
    :class:`UsageError` naming the flag; a write that fails later a :class:`RingtoolError`."""

    def __init__(self, cfg: RunConfig, snaplen: int, decoder: Decoder) -> None:
        self.decoder = decoder
        self.pcap: Any = None
        self.kmes: Any = None
        self.hook: Any = None
        self.pcap_path = cfg.pcap
        try:
            self._open(cfg, snaplen)
        except BaseException:
            self.close()
            raise

    def _open(self, cfg: RunConfig, snaplen: int) -> None:
        if cfg.export is not None and cfg.export.wanted:
            from ringtool.export.trace_hook import TraceHook

            self.hook = TraceHook(cfg.export, self.decoder, possible_cpu_count())
        if cfg.pcap is not None:
            from ringtool.trace.pcap_sink import NetCapture

            self.pcap = NetCapture.open(cfg.pcap, snaplen)
        if cfg.kmes is not None:
            from ringtool.trace.kmes_sink import KmesSink

            self.kmes = KmesSink(cfg.kmes)

    def publish(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None:
        if self.pcap is not None and net:
            try:
                self.pcap.write(net)  # ringtool.trace.pcap_sink: direction, loopback once
            except OSError as exc:
                raise RingtoolError(f"--pcap {self.pcap_path}: {exc.strerror}") from None
        if self.kmes is not None:
            self.kmes.publish(arr, net)
        if self.hook is not None:
            self.hook.publish(arr, net)

    def tick(self, stats: TraceStats) -> list[str]:
        """``--export``: counters into ``stats.export``; returns notes to show."""
        return self.hook.tick(stats) if self.hook is not None else []

    def close(self, stats: TraceStats | None = None) -> None:
        """Close every sink (once; later calls do nothing). Raises RingtoolError when
        the pcap file could not be completed (e.g. the disk is full)."""
        hook, self.hook = self.hook, None
        pcap, self.pcap = self.pcap, None
        kmes, self.kmes = self.kmes, None
        try:
            if hook is not None:
                hook.close(stats)  # drains the exporter: final counts into stats.export
        finally:
            if kmes is not None:
                with contextlib.suppress(Exception):
                    kmes.close()
            if pcap is not None:
                try:
                    pcap.close()
                except OSError as exc:
                    raise RingtoolError(f"--pcap {self.pcap_path}: {exc.strerror}") from None


__all__ = ["BATCH", "RunConfig", "make_output", "run_trace"]
