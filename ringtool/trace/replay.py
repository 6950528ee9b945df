"""``ringtool replay FILE...``: a recording through the trace's outputs, as it was live.

The recording's batches (:class:`~ringtool.trace.replay_play.Messages`) go, after
the filters given (:class:`ReplayFilter`: the trace's ``-p -c -u -n --events -x``, on
the records' columns, a batch at a time), to the statistics and to the output that
``--json``, ``--csv`` or columns name (:func:`ringtool.trace.outputs.make_output`), all
at once or at ``speed`` times the recorded pace (by the records' timestamps). Each
recorded ``stats`` message closes an interval of the statistics as live
(:func:`~ringtool.trace.replay_play.apply_stats`) and goes to the output (its stats
line: every one with ``--stats``, else those of intervals with drops). At the
end the summary: the replayed events counted as live, and the kernel's accounting
(drops and losses per source and CPU, the rings, the duration) as the recording's
summary says. Without a filter the replayed events must be those the summary counts
(a :class:`~ringtool.errors.RecordingError` otherwise); with ``--json`` the summary
object is the live one.

The parts of a rotated recording are given in order (one run's: checked). A file cut
short (a killed recorder) is replayed to its last whole batch, its summary made from
its last ``stats`` message, and then its :class:`~ringtool.errors.RecordingTruncated`
is raised. On a terminal the dashboard replays instead: :mod:`ringtool.trace.replay_dash`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ringtool.errors import RecordingError, RecordingTruncated
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.decode import Decoder
from ringtool.event.json_lines import object_line
from ringtool.event.layout import TraceLayout, load_layout
from ringtool.event.recording import STATS
from ringtool.event.records import Records
from ringtool.event.registry import SOURCE_OF
from ringtool.event.syscalls import syscall_namer
from ringtool.event.tcp_data import ESTABLISHED
from ringtool.trace.outputs import RunConfig, make_output
from ringtool.trace.reading.filters import NameFilter
from ringtool.trace.replay_play import (
    Message,
    Messages,
    Timeline,
    apply_stats,
    apply_summary,
    scan,
)
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import summary_record

Array = np.ndarray[Any, Any]

#: Summary keys replay cannot recompute (the cost, a flight recorder's overwritten
#: events): taken from the recording's summary as they are.
AS_RECORDED = ("cost", "overwritten", "overwritten_min")


@dataclass(frozen=True)
class ReplayFilter:
    """The trace's filters, applied to recorded records: ``pid`` (tgid), ``comm``
    (exact), ``uid`` (real uid), ``name`` (-n:
    :class:`~ringtool.trace.reading.filters.NameFilter`), ``sources`` (--events: the
    types those sources emit) and ``failed`` (-x: exec-source records only failed
    execs, opens that failed, TCP connections never ESTABLISHED). As live, only
    ``sources`` selects packets (TC programs run without a task), and markers pass
    every other filter."""

    pid: int | None = None
    comm: str | None = None
    uid: int | None = None
    name: re.Pattern[str] | None = None
    sources: tuple[str, ...] | None = None
    failed: bool = False

    @property
    def any(self) -> bool:
        return any(v not in (None, False) for v in vars(self).values())


class _Filtering:
    def __init__(self, f: ReplayFilter, layout: TraceLayout) -> None:
        self.f = f
        self.layout = layout
        self.names = NameFilter(f.name) if f.name is not None else None
        self.types = None
        self.mark = layout.type_id("mark") if "mark" in layout.names else -1
        if f.sources is not None:
            keep = {n for n, src in SOURCE_OF.items() if src in f.sources} | {"mark"}
            self.types = np.array([t for t, n in layout.type_names.items() if n in keep])

    def _mask(self, rec: Array, net: bool) -> Array:
        f, h = self.f, rec["h"]
        mask = np.ones(len(rec), bool)
        if self.types is not None:
            mask &= np.isin(h["type"], self.types)
        if net:  # packets: TC programs, no task; live, only --events selects them
            return mask
        if f.pid is not None:
            mask &= h["pid"] == f.pid
        if f.comm is not None:
            mask &= h["comm"] == f.comm.encode()
        if f.uid is not None:
            uid = rec["uid"]
            for type_id, view in self.layout.views.items():  # tcp: its own struct's uid
                uid = np.where(h["type"] == type_id, rec.view(view)["uid"], uid)
            mask &= uid == f.uid
        if f.failed:
            t, lay = h["type"], self.layout
            execs = np.isin(t, [lay.type_id(n) for n in ("exec", "exit", "fork")])
            mask &= ~execs | ((t == lay.type_id("exec")) & (rec["ret"] < 0))
            mask &= (t != lay.type_id("open")) | (rec["ret"] < 0)
            if "tcp" in lay.names:
                tcp = t == lay.type_id("tcp")
                states = rec.view(lay.views[lay.type_id("tcp")])["states"]
                mask &= ~tcp | ((states >> ESTABLISHED) & 1 == 0)
        if self.names is not None and len(rec):
            uniq, inverse = np.unique(h["comm"], return_inverse=True)
            ok = np.array([self.names.match(bytes(c)) for c in uniq.tolist()], dtype=bool)
            mask &= ok[inverse.reshape(-1)]
        if self.types is None or self.mark in self.types:
            mask |= h["type"] == self.mark  # filters never apply to markers (docs/trace.md)
        return mask

    def __call__(self, records: Records) -> Records:
        ev = self._mask(records.events, False)
        net = self._mask(records.net.rec, True)
        events = records.events if ev.all() else records.events[ev]
        packets = records.net if net.all() else records.net.take(net)
        return Records(events, packets)


def filtering(flt: ReplayFilter) -> Callable[[Records], Records] | None:
    """The filters ``flt`` as a function of a batch (None: no filter given)."""
    return _Filtering(flt, load_layout()) if flt.any else None


def _pace(first_ts: int, ts: int, t0: float, speed: float) -> None:
    wait = t0 + (ts - first_ts) / 1e9 / speed - time.monotonic()
    if wait > 0:
        time.sleep(wait)


def replay(
    paths: Sequence[Path],
    cfg: RunConfig,
    flt: ReplayFilter,
    stream: TextIO,
    *,
    speed: float | None = None,
) -> int:
    """Replay the recording ``paths`` (see the module doc); the exit status (0)."""
    layout = load_layout()
    msgs = Messages(paths, RecordSchema(layout))
    it = iter(msgs)
    truncated: RecordingTruncated | None = None
    try:
        head = next(it, None)  # the first part opened (its errors before any output)
    except RecordingTruncated as exc:
        head, truncated = None, exc
    first = msgs.recording
    assert first is not None
    timeline = scan(paths)  # the run's CPUs and sources
    decoder = Decoder(layout, syscall_namer(), realtime_offset_ns=first.offset_ns)
    out = make_output(cfg, decoder, stream)
    filtering = _Filtering(flt, layout)
    stats: TraceStats | None = None
    first_ts: int | None = None
    t0 = time.monotonic()
    out.open()
    try:
        try:
            for msg in _chain(head, it):
                if stats is None:
                    stats = _new_stats(layout, decoder, timeline)
                    out.start(stats.sources, [])
                if not isinstance(msg, Records):
                    if msg[0] == STATS:  # an interval as live: its stats line
                        apply_stats(stats, msg[1])
                        out.stats(stats)
                    continue
                if speed is not None:
                    ts = _first_ts(msg)
                    if first_ts is None:
                        first_ts = ts
                    _pace(first_ts, ts, t0, speed)
                shown = filtering(msg) if flt.any else msg
                stats.add_batch(shown.events)
                stats.add_net(shown.net)
                out.batch(shown)
        except RecordingTruncated as exc:
            truncated = exc
        last = msgs.recording or first
        if stats is None:
            stats = _new_stats(layout, decoder, timeline)
            out.start(stats.sources, [])
    finally:
        out.close()
    acc = last.summary or (last.stats or {})
    duration = float(acc.get("duration_s", acc.get("uptime_s", 0.0)))
    apply_summary(stats, acc, duration)
    if last.summary is not None and not flt.any and stats.total != last.summary.get("events"):
        raise RecordingError(
            f"{last.path}: the summary counts {last.summary.get('events')} "
            f"events, the recording holds {stats.total}"
        )
    if cfg.mode == "json" and last.summary is not None:
        stream.write(object_line(_json_summary(stats, last.summary)) + "\n")
        stream.flush()
    else:
        out.summary(stats)
    if truncated is not None:
        raise truncated
    return 0


def _json_summary(stats: TraceStats, recorded: dict[str, Any]) -> dict[str, Any]:
    """The ``--json`` summary: the replayed one, with what replay cannot recompute
    (:data:`AS_RECORDED`) as recorded, in the recorded summary's key order."""
    mine = summary_record(stats)
    mine.update({k: recorded[k] for k in AS_RECORDED if k in recorded})
    return {**{k: mine[k] for k in recorded if k in mine}, **mine}


def _chain(head: Message | None, rest: Iterator[Message]) -> Iterator[Message]:
    if head is not None:
        yield head
    yield from rest


def _first_ts(records: Records) -> int:
    ts = [int(a["h"]["ts"].min()) for a in records.arrays()]
    return min(ts) if ts else 0


def _new_stats(layout: TraceLayout, decoder: Decoder, timeline: Timeline) -> TraceStats:
    stats = TraceStats(layout.type_names, timeline.ncpu, list(timeline.sources),
                       decoder.syscall_name)  # fmt: skip
    stats.begin(0.0)  # recorded time: the stats lines' uptime_s
    return stats


__all__ = ["AS_RECORDED", "ReplayFilter", "filtering", "replay"]
