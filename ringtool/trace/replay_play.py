"""A recording on its recorded time line, and a player that shows it up to a point.

:class:`Messages` reads one run's parts in order (:func:`recording_parts`) as one
sequence of messages: each batch of records, and each accounting message (``stats``,
``summary``, ``rotate``: ``(kind, body)``) where it was written between them.

Recorded time is seconds since the run began to read (the ``uptime_s`` of its stats
lines). A batch is at its newest record's timestamp (CLOCK_MONOTONIC ns) less the
run's start, a ``stats`` message at its ``uptime_s``, the ``summary`` at its
``duration_s``; a message is never before the one written before it (the time line
is the running maximum). The run's start is not in the file: :func:`scan` estimates it
from the batches and the stats messages written after them (a tick comes after the
records it read: start >= newest timestamp before it - its ``uptime_s``), at most the
first record's timestamp. :func:`scan` reads the file once when it is opened
(pyarrow's reader, the ``ts`` and ``cpu`` columns' extremes only): the time line's
end, the run's CPUs and sources.

:class:`Player` feeds a :class:`~ringtool.trace.report.stats.TraceStats` and an
output from the start to a point in recorded time: :meth:`Player.advance` (to a
time), :meth:`Player.step` (one batch), :meth:`Player.seek` (a time before the
position reads the recording again from its start, so every count is what it was
then). Each ``stats`` message closes an interval of the statistics as live
(:func:`apply_stats`: rates, the kernel's drops and losses per CPU, ring fill), the
``summary`` gives the run's final accounting (:func:`apply_summary`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from ringtool.errors import RecordingError
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.decode import Decoder
from ringtool.event.recording import BODY, KIND, STATS, SUMMARY, Recording, RecordingReader
from ringtool.event.records import Records
from ringtool.trace.reading.flight_count import Overwritten
from ringtool.trace.report.stats import DropMark, TraceStats
from ringtool.trace.sink import Output

Accounting = tuple[str, dict[str, Any]]
Message = Records | Accounting
#: The key of an accounting message's recorded time.
TIME_OF = {STATS: "uptime_s", SUMMARY: "duration_s"}


def recording_parts(paths: Sequence[Path], schema: RecordSchema) -> Iterator[RecordingReader]:
    """The readers of one run's parts, in order (checked as each opens)."""
    prev: Recording | None = None
    for path in paths:
        reader = RecordingReader(path, schema)
        rec = reader.recording
        if prev is not None:
            same = rec.meta.get("run_id") == prev.meta.get("run_id")
            if not (
                prev.rotated
                and same
                and rec.meta.get("part") == str(int(prev.meta.get("part", "0")) + 1)
            ):
                raise RecordingError(
                    f"{path} is not the part after {prev.path} of one "
                    "recording: give one run's parts, in order"
                )
        yield reader
        prev = rec


class Messages:
    """One run's messages in order (see the module doc); :attr:`recording` is the part
    being read (None before the first opens). A damaged or cut part raises its
    :class:`~ringtool.errors.RecordingError` after every message before the damage."""

    def __init__(self, paths: Sequence[Path], schema: RecordSchema) -> None:
        self.paths = list(paths)
        self.schema = schema
        self.recording: Recording | None = None

    def __iter__(self) -> Iterator[Message]:
        for reader in recording_parts(self.paths, self.schema):
            self.recording = reader.recording
            pending: list[Accounting] = []
            reader.on_account = pending.append
            try:
                for records in reader.records():
                    yield from _drain(pending, reader.path)
                    yield records
            except RecordingError:
                yield from _drain(pending, reader.path)
                raise
            yield from _drain(pending, reader.path)


def _drain(pending: list[Accounting], path: Path) -> Iterator[Accounting]:
    while pending:
        kind, body = pending.pop(0)
        if not isinstance(body, dict):
            raise RecordingError(f"{path}: its {kind} message is not a JSON object")
        yield kind, body


def newest_ts(records: Records) -> int | None:
    """The newest timestamp of a batch (ns), None when it is empty."""
    ts = [int(a["h"]["ts"].max()) for a in records.arrays() if len(a)]
    return max(ts) if ts else None


@dataclass
class Clock:
    """Recorded time (see the module doc) from ``origin_ns``, the run's start."""

    origin_ns: int
    now: float = 0.0

    def at(self, ts_ns: int | None, uptime: float | None) -> float:
        """The time of the next message: a batch's newest ``ts_ns`` or an accounting
        message's ``uptime``; never before the one before it."""
        t = (ts_ns - self.origin_ns) / 1e9 if ts_ns is not None else uptime
        if t is not None and t > self.now:
            self.now = t
        return self.now

    def of(self, msg: Message) -> float:
        if isinstance(msg, Records):
            return self.at(newest_ts(msg), None)
        up = msg[1].get(TIME_OF.get(msg[0], ""))
        return self.at(None, float(up) if isinstance(up, int | float) else None)


@dataclass
class Timeline:
    """What :func:`scan` found: the run's start (CLOCK_MONOTONIC ns), the time line's
    end (s), its batches, the CPUs (from the accounting, or the records), the sources,
    the clock offset of the first part (``realtime_offset_ns``)."""

    origin_ns: int = 0
    end: float = 0.0
    batches: int = 0
    ncpu: int = 1
    sources: list[str] = field(default_factory=list)
    offset_ns: int = 0


def scan(paths: Sequence[Path]) -> Timeline:
    """The time line of a recording's parts (see the module doc). Where a part is
    damaged the scan stops: the player raises the error when it gets there."""
    marks: list[tuple[int | None, float | None, str]] = []  # (newest ts, uptime, kind)
    tl = Timeline()
    for i, path in enumerate(paths):
        try:
            with pa.OSFile(str(path), "rb") as f:
                names = ipc.open_stream(f).schema.names
                f.seek(0)
                want = [names.index(c) for c in ("ts", "cpu")]
                reader = ipc.open_stream(f, options=ipc.IpcReadOptions(included_fields=want))
                if i == 0:
                    meta = reader.schema.metadata or {}
                    tl.offset_ns = int(meta.get(b"realtime_offset_ns", b"0") or 0)
                while True:
                    batch, custom = reader.read_next_batch_with_custom_metadata()
                    _mark(batch, custom, marks, tl)
        except StopIteration:
            continue
        except (OSError, pa.ArrowException, ValueError, MemoryError):
            break
    first = next((ts for ts, _, _ in marks if ts is not None), None)
    newest, lower = None, None
    for ts, up, kind in marks:
        if ts is not None:
            newest = ts if newest is None else max(newest, ts)
        elif kind == STATS and up is not None and newest is not None:
            lower = max(lower or 0, newest - int(up * 1e9))
    tl.origin_ns = 0 if first is None else first if lower is None else min(first, lower)
    clock = Clock(tl.origin_ns)
    for ts, up, _ in marks:
        tl.end = clock.at(ts, up)
    return tl


def _mark(batch: pa.RecordBatch, custom: Any, marks: list[tuple[int | None, float | None, str]],
          tl: Timeline) -> None:  # fmt: skip
    if custom is not None and KIND in custom:
        kind = custom[KIND].decode(errors="replace")
        body = json.loads(custom.get(BODY, b"{}"))
        body = body if isinstance(body, dict) else {}
        up = body.get(TIME_OF.get(kind, ""))
        marks.append((None, float(up) if isinstance(up, int | float) else None, kind))
        per_cpu = body.get("dropped_per_cpu") or body.get("per_cpu") or []
        tl.ncpu = max(tl.ncpu, len(per_cpu))
        if isinstance(body.get("sources"), list):
            tl.sources = [str(s) for s in body["sources"]]
        return
    if not batch.num_rows:
        return
    tl.batches += 1
    marks.append((int(pc.max(batch.column("ts")).as_py()), None, "records"))
    tl.ncpu = max(tl.ncpu, int(pc.max(batch.column("cpu")).as_py()) + 1)


def apply_stats(stats: TraceStats, body: dict[str, Any]) -> None:
    """A recorded ``stats`` line closes an interval of ``stats`` as live: the rates
    since the last, the kernel's drops and losses per CPU, the ring fill, the rings
    (``stats`` counts from 0: :meth:`~TraceStats.begin` at 0). A stats line has no
    drops per source: with one source they are its, else they come with the summary."""
    per_cpu = [r for r in body.get("per_cpu", []) if isinstance(r, dict)]
    stats.observe_fill({int(r.get("cpu", i)): float(r.get("fill_pct", 0)) / 100
                        for i, r in enumerate(per_cpu)})  # fmt: skip
    stats.tick(
        drops_cpu=[int(r.get("drops", 0)) for r in per_cpu],
        lost_cpu={int(r.get("cpu", i)): int(r.get("lost", 0)) for i, r in enumerate(per_cpu)},
        now=stats.start + float(body.get("uptime_s", stats.interval_end)),
    )
    stats.end = stats.start + stats.interval_end  # the uptime the line says
    if len(stats.sources) == 1:  # a stats line has drops per CPU, not per source
        stats.drops_source = {stats.sources[0]: stats.dropped}
    stats.malformed = int(body.get("malformed", stats.malformed))
    stats.rings = body.get("rings", stats.rings)
    stats.ordering = body.get("ordering", stats.ordering)
    stats.export = body.get("export", stats.export)


def recorded_overwritten(acc: dict[str, Any]) -> Overwritten | None:
    """A flight recorder's overwritten count as the summary or stats line ``acc``
    recorded it (``overwritten``, exact, or the lower bound ``overwritten_min``, with
    its per-CPU counts); None where the run was no flight recorder."""
    key = next((k for k in ("overwritten", "overwritten_min") if k in acc), None)
    if key is None:
        return None
    per_cpu = {int(c): int(n) for c, n in (acc.get(f"{key}_per_cpu") or {}).items()}
    return Overwritten(int(acc[key]), key == "overwritten", per_cpu, int(acc.get("damaged", 0)))


def apply_summary(stats: TraceStats, acc: dict[str, Any], duration: float) -> None:
    """The kernel's accounting of a recorded summary (or stats line) into ``stats``."""
    per_cpu = list(
        acc.get("dropped_per_cpu") or [r.get("drops", 0) for r in acc.get("per_cpu", [])]
    )
    stats.drops_cpu = per_cpu + [0] * (stats.ncpu - len(per_cpu))
    stats.drops_source = dict(acc.get("dropped_by_source", {}))
    stats.drops_source_cpu = {
        k: list(v) for k, v in acc.get("dropped_by_source_per_cpu", {}).items()
    }
    lost = acc.get("lost_per_cpu") or {r["cpu"]: r.get("lost", 0) for r in acc.get("per_cpu", [])}
    stats.lost_cpu = {int(k): int(v) for k, v in lost.items() if v or "lost_per_cpu" in acc}
    stats.drop_intervals = int(acc.get("drop_intervals", 0))
    stats.drop_log.clear()  # the recorded ones, not those the replayed stats lines made
    stats.drop_log.extend(DropMark(**m) for m in acc.get("drops_at", []))
    stats.malformed = int(acc.get("malformed", 0))
    stats.ordering = acc.get("ordering")
    stats.rings = acc.get("rings")
    stats.export = acc.get("export")
    stats.overwritten = recorded_overwritten(acc)
    stats.start, stats.end = 0.0, duration
    if acc.get("sources") is not None:
        stats.sources = list(acc["sources"])


class Player:
    """Shows a recording from its start up to :attr:`pos` (recorded seconds) into a
    fresh :class:`TraceStats` and ``out`` (``keep``: the filters, or None), through
    ``on_restart`` when a seek back starts again (the new statistics: the output
    forgets what it kept); ``timeline``: the recording's :func:`scan` (None: scanned
    here). ``ticks`` counts the ``stats`` messages applied; an error
    of the recording ends it there (:attr:`error`, raised by the caller)."""

    def __init__(self, paths: Sequence[Path], decoder: Decoder, out: Output[TraceStats], *,
                 keep: Callable[[Records], Records] | None = None,
                 on_restart: Callable[[TraceStats], None] | None = None,
                 timeline: Timeline | None = None) -> None:  # fmt: skip
        self.paths = list(paths)
        self.decoder = decoder
        self.schema = RecordSchema(decoder.layout)
        self.out = out
        self.keep = keep
        self.on_restart = on_restart
        self.timeline = timeline if timeline is not None else scan(self.paths)
        self.error: RecordingError | None = None
        self._start()

    def _start(self) -> None:
        tl = self.timeline
        self.stats = TraceStats(self.decoder.layout.type_names, tl.ncpu, list(tl.sources),
                                self.decoder.syscall_name)  # fmt: skip
        self.stats.begin(0.0)
        self.stats.end = 0.0
        self.pos = 0.0
        self.ticks = 0
        self.done = False
        self.summary: dict[str, Any] | None = None
        self._it = iter(Messages(self.paths, self.schema))
        self._clock = Clock(tl.origin_ns)
        self._ahead: tuple[float, Message] | None = None

    @property
    def end(self) -> float:
        return self.timeline.end

    def _peek(self) -> tuple[float, Message] | None:
        if self._ahead is None and not self.done:
            try:
                msg = next(self._it)
            except StopIteration:
                self.done = True
                return None
            except RecordingError as exc:
                self.error, self.done = exc, True
                return None
            self._ahead = (self._clock.of(msg), msg)
        return self._ahead

    def _take(self) -> Message:
        assert self._ahead is not None
        t, msg = self._ahead
        self._ahead = None
        self.pos = max(self.pos, t)
        if isinstance(msg, Records):
            shown = self.keep(msg) if self.keep is not None else msg
            self.stats.add_batch(shown.events)
            self.stats.add_net(shown.net)
            self.out.batch(shown)
        elif msg[0] == STATS:
            apply_stats(self.stats, msg[1])
            self.ticks += 1
        elif msg[0] == SUMMARY:
            self.summary = msg[1]
            apply_summary(self.stats, msg[1], float(msg[1].get("duration_s", self.pos)))
        self.stats.end = self.pos
        return msg

    def advance(self, to: float) -> None:
        """Every message up to ``to`` shown; the position is ``to`` (at most the end)."""
        while (ahead := self._peek()) is not None and ahead[0] <= to:
            self._take()
        self.pos = max(self.pos, min(to, self.end))
        self.stats.end = self.pos

    def step(self) -> None:
        """One batch of records forward (with the accounting before it)."""
        while self._peek() is not None:
            if isinstance(self._take(), Records):
                break

    def seek(self, to: float) -> None:
        """To ``to`` (within the time line): a time before the position reads again
        from the start."""
        to = min(max(0.0, to), self.end)
        if to < self.pos:
            self._start()
            if self.on_restart is not None:
                self.on_restart(self.stats)
        self.advance(to)

    @property
    def next_at(self) -> float | None:
        """The time of the next message (None: none left)."""
        ahead = self._peek()
        return None if ahead is None else ahead[0]


__all__ = [
    "Clock",
    "Message",
    "Messages",
    "Player",
    "Timeline",
    "apply_stats",
    "apply_summary",
    "newest_ts",
    "recorded_overwritten",
    "recording_parts",
    "scan",
]
