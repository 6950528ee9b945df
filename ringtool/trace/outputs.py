"""Which output and which sinks a trace run gets, from its :class:`RunConfig`."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ringtool.event.decode import Decoder
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.sink import Output, Sink

if TYPE_CHECKING:
    from ringtool.export.trace_hook import HookOptions


@dataclass(frozen=True)
class RunConfig:
    """How to run: ``mode`` is ``json``, ``csv``, ``columns``, ``quiet`` or ``tui``;
    ``duration`` in seconds (None: until Ctrl-C); ``ordered``/``window_us`` merge the
    per-CPU rings by timestamp; ``pcap`` writes net packets as pcapng; ``kmes``
    publishes events to a KMES bridge socket; ``width`` is the line width of
    ``columns``."""

    mode: str = "columns"
    duration: float | None = None
    interval: float = 1.0
    ordered: bool = False
    window_us: float | None = None
    pcap: Path | None = None
    #: ``--force``: ``pcap`` may overwrite an existing file (never through a symlink)
    force: bool = False
    kmes: str | None = None
    #: ``columns``: cut lines to this many characters (None: never cut)
    width: int | None = 80
    #: ``--hist``: each syscall's latency histogram after the summary
    hist: bool = False
    #: ``--export``/``--metrics``, or None
    export: HookOptions | None = None
    #: ``-n``: the pattern the comm must match (user space, after the ring:
    #: :class:`ringtool.trace.reading.filters.NameFilter`), or None
    name: re.Pattern[str] | None = None
    #: ``--fields``: the event fields to output, in this order (json, csv, columns)
    fields: tuple[str, ...] | None = None
    #: the cost panel's and summary's BPF figures: the kernel's BPF run-time statistics
    #: (:class:`ringtool.trace.reading.cost.CostSampler`) on for the whole run (True,
    #: ``--cost``), never (False, ``--no-cost``: ringtool's own CPU only), or (None)
    #: while the output wants them (the dashboard's cost panel is open)
    cost: bool | None = None
    #: ``--keep-exited``: the dashboard keeps exited processes in its table
    keep_exited: bool = False
    #: ``--stats``: json, csv and columns write a stats line every interval on stderr
    #: (else only for an interval with drops or losses)
    stats_lines: bool = False
    #: the command's filters as flags (``-c bash``, ``-x``): the dashboard's header
    #: shows them (:func:`ringtool.cli.trace_targets.shown_filters`)
    filters: tuple[str, ...] = ()
    #: ``-T``/``--date``: the columns' times with their date
    dates: bool = False
    #: ``--record``: the recording's file (None: none) and ``--record-rotate``'s
    #: ``(bytes, seconds)`` (one of them None), or None
    record: Path | None = None
    record_rotate: tuple[int | None, float | None] | None = None


def make_output(cfg: RunConfig, decoder: Decoder, stream: TextIO) -> Output[TraceStats]:
    """The output ``cfg.mode`` names, writing to ``stream`` (the TUI: the terminal)."""
    if cfg.mode == "json":
        from ringtool.trace.writers.output_json import JsonOutput

        return JsonOutput(stream, decoder, cfg.fields, stats_lines=cfg.stats_lines)
    if cfg.mode == "csv" or (cfg.mode == "columns" and cfg.fields):
        from ringtool.trace.writers.output_fields import CsvOutput, FieldColumnOutput

        if cfg.mode == "csv":
            return CsvOutput(stream, decoder, cfg.fields, stats_lines=cfg.stats_lines)
        return FieldColumnOutput(stream, decoder, cfg.fields or (), width=cfg.width,
                                 stats_lines=cfg.stats_lines, dates=cfg.dates)  # fmt: skip
    if cfg.mode == "quiet":
        from ringtool.trace.writers.output_quiet import QuietOutput

        return QuietOutput(stream)
    if cfg.mode == "tui":
        from ringtool.trace.dashboard.tui import TraceTui

        return TraceTui(decoder, interval=cfg.interval, keep_exited=cfg.keep_exited,
                        filters=cfg.filters)  # fmt: skip
    from ringtool.trace.writers.output_columns import ColumnOutput

    return ColumnOutput(
        stream, decoder, width=cfg.width, stats_lines=cfg.stats_lines, dates=cfg.dates
    )


def open_sinks(cfg: RunConfig, snaplen: int, decoder: Decoder, ncpu: int) -> list[Sink[TraceStats]]:
    """The sinks ``cfg`` asks for, opened before the sources load (a ``--pcap`` that
    cannot be created is a :class:`~ringtool.errors.UsageError` naming the flag). On an
    error the ones already open are closed."""
    sinks: list[Sink[TraceStats]] = []
    try:
        if cfg.export is not None and cfg.export.wanted:
            from ringtool.export.trace_hook import TraceHook

            sinks.append(TraceHook(cfg.export, decoder, ncpu))
        if cfg.pcap is not None:
            from ringtool.trace.writers.output_pcap import PcapSink

            sinks.append(PcapSink.open(cfg.pcap, snaplen, force=cfg.force,
                                       realtime_offset_ns=decoder.offset_ns))  # fmt: skip
        if cfg.record is not None:
            from ringtool.trace.writers.output_record import RecordSink, Rotate

            rot = None if cfg.record_rotate is None else Rotate(*cfg.record_rotate)
            sinks.append(RecordSink(cfg.record, decoder, force=cfg.force, rotate=rot))
        if cfg.kmes is not None:
            from ringtool.trace.writers.kmes_sink import KmesSink

            sinks.append(KmesSink(cfg.kmes))
    except BaseException:
        for sink in sinks:
            with contextlib.suppress(Exception):
                sink.close(None)
        raise
    return sinks


#: How late the dashboard reads a record at most when nothing else takes the events (no
#: ``--export``, ``--record``, ``--pcap``, ``--kmes``): it draws them once an interval,
#: and a key or a stop signal wakes it at once; a stream's 50 ms would wake it 20 times
#: a second for nothing (docs/benchmarks.md, ``trace-tui-cpu``).
DASHBOARD_LATENCY_S = 0.25


def read_latency(cfg: RunConfig) -> float | None:
    """How late the run may read a record at most, when its output decides it
    (:data:`DASHBOARD_LATENCY_S`: the dashboard alone); None: the trace's default."""
    alone = not (cfg.export is not None or cfg.record or cfg.pcap or cfg.kmes)
    return DASHBOARD_LATENCY_S if cfg.mode == "tui" and alone else None


def close_sinks(sinks: list[Sink[TraceStats]], stats: TraceStats | None) -> None:
    """Close every sink once (the list is emptied), in order; the first error is
    raised after all were closed."""
    first: BaseException | None = None
    while sinks:
        try:
            sinks.pop(0).close(stats)
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first


__all__ = ["DASHBOARD_LATENCY_S", "RunConfig", "close_sinks", "make_output", "open_sinks",
           "read_latency"]  # fmt: skip
