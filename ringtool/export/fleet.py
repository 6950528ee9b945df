"""What ``ringtool collect`` knows about each host, from the messages it read.

:class:`Fleet` is fed :class:`~ringtool.export.wire.Received` messages. Per host it
keeps events received (per type), bytes, the newest event time (so the *lag*: how far
behind real time the newest event read is), and per lane (boot, run, CPU, type) the
sequence numbers seen, as intervals (:class:`~ringtool.export.seqset.SeqSet`, with
the stream sequence each end was seen at). A number below the highest seen that never
arrived is either a *gap* (lost: an event the exporter counted as ``export_dropped``, a
message deleted from the stream, or not read yet) or *read elsewhere* (another
``collect`` on the same durable consumer had it): it is read elsewhere when the stream
range around it holds a message the consumer may have delivered to another reader
(:class:`~ringtool.export.deliveries.Deliveries`), so a second collector's gaps are
only what neither could read. Per run, events the run's latest stats say were
exported beyond what this collector read, read elsewhere and counted as gaps are read
elsewhere too (the ones after the last this collector saw of a lane). ``duplicates``
are numbers seen twice (a redelivery). The host's own counters (kernel drops, lost,
export drops, exported) come from its latest ``stats/1`` message of each run, summed
over runs (checked counts: :func:`ringtool.export.reading.decode`). Its busiest TCP
connections and disks come from its ``tcp`` and ``disk`` events
(:class:`~ringtool.export.busiest.Busiest`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ringtool.errors import BadMessageError
from ringtool.event.layout import TraceLayout
from ringtool.export.busiest import Busiest
from ringtool.export.config import MAX_HOSTS
from ringtool.export.deliveries import Deliveries
from ringtool.export.reading import Received
from ringtool.export.seqset import SeqSet


@dataclass
class HostView:
    """One host's numbers (see module doc)."""

    host: str
    events: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    messages: int = 0
    newest_ts_ns: int = 0
    last_arrival: float = 0.0
    lanes: dict[tuple[str, str, int, str], SeqSet] = field(default_factory=dict)
    runs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    finished: set[tuple[str, str]] = field(default_factory=set)
    rate: float = 0.0
    deliveries: Deliveries | None = None
    busiest: Busiest = field(default_factory=Busiest)
    _mark: int = 0

    def run_total(self, key: str) -> int:
        return sum(int(r.get(key, 0)) for r in self.runs.values())

    def accounting(self) -> tuple[int, int]:
        """``(gaps, read_elsewhere)``: the numbers missing below each lane's highest,
        split by where they may be (module doc), plus per run the exported events
        neither read here nor missing in a lane (read elsewhere after the last seen)."""
        per_run: dict[tuple[str, str], list[int]] = {}  # run: [read here, gaps, elsewhere]
        for lane, seqs in self.lanes.items():
            counts = per_run.setdefault(lane[:2], [0, 0, 0])
            counts[0] += seqs.total
            for n, after, before in seqs.holes():
                gone = self.deliveries is not None and self.deliveries.elsewhere(after, before)
                counts[2 if gone else 1] += n
        gaps = sum(c[1] for c in per_run.values())
        elsewhere = 0
        for run, (here, lost, away) in per_run.items():
            exported = int(self.runs.get(run, {}).get("exported", 0))
            elsewhere += away + max(0, exported - here - lost - away)
        return gaps, elsewhere

    @property
    def gaps(self) -> int:
        return self.accounting()[0]

    @property
    def duplicates(self) -> int:
        return sum(s.duplicates for s in self.lanes.values())

    def lag_s(self, now: float) -> float:
        return max(0.0, now - self.newest_ts_ns / 1e9) if self.newest_ts_ns else 0.0

    def record(self, now: float) -> dict[str, Any]:
        gaps, elsewhere = self.accounting()
        return {
            "host": self.host, "events": self.events, "events_per_s": round(self.rate, 1),
            "by_type": dict(sorted(self.by_type.items())), "bytes": self.bytes,
            "dropped": self.run_total("dropped"), "lost": self.run_total("lost"),
            "exported": self.run_total("exported"),
            "export_dropped": self.run_total("export_dropped"),
            "gaps": gaps, "read_elsewhere": elsewhere, "duplicates": self.duplicates,
            "lag_s": round(self.lag_s(now), 3), "runs": len(self.runs),
            "finished_runs": len(self.finished), **self.busiest.record(),
        }  # fmt: skip


#: Reason of a message refused because it would pass one of the bounds below.
OVER_LIMIT = "over a limit"
#: Per host at most: runs (a run is one exporting process), lanes (run, CPU, type),
#: and disjoint intervals of sequence numbers per lane (each gap is one).
MAX_RUNS = 1024
MAX_LANES = 16384
MAX_INTERVALS = 65536


class Fleet:
    """Every host seen (see module doc); ``pending`` is the consumer's backlog in
    messages and ``deliveries`` what it delivered to this collector (both kept by the
    collector), ``bad`` the messages refused, by reason in
    ``bad_reasons`` (a fixed set of phrases: :meth:`refuse`). At most ``max_hosts``
    hosts and, per host, :data:`MAX_RUNS` runs and :data:`MAX_LANES` lanes are kept: a
    message that would pass one is refused (:data:`OVER_LIMIT`), so memory is bounded
    whatever names and numbers the network sends."""

    def __init__(self, max_hosts: int = MAX_HOSTS, layout: TraceLayout | None = None) -> None:
        self.hosts: dict[str, HostView] = {}
        self.layout = layout
        self.max_hosts = max_hosts
        self.pending = 0
        self.bad = 0
        self.bad_reasons: dict[str, int] = {}
        self.messages = 0
        self.deliveries = Deliveries()
        self._mark_time = time.monotonic()

    def refuse(self, reason: str) -> bool:
        """Count a refused message; True for the first of its ``reason``."""
        self.bad += 1
        seen = self.bad_reasons.get(reason, 0)
        self.bad_reasons[reason] = seen + 1
        return seen == 0

    def _check(self, rec: Received) -> None:
        """BadMessageError(:data:`OVER_LIMIT`) when ``rec`` would pass a bound."""
        view = self.hosts.get(rec.host)
        if view is None:
            if len(self.hosts) >= self.max_hosts:
                raise BadMessageError(OVER_LIMIT, f"more than {self.max_hosts} hosts "
                                      "(collect --max-hosts)")  # fmt: skip
            return
        if rec.stats is not None:
            if (rec.boot, rec.run) not in view.runs and len(view.runs) >= MAX_RUNS:
                raise BadMessageError(OVER_LIMIT, f"more than {MAX_RUNS} runs of {rec.host!r}")
            return
        lane = view.lanes.get(rec.lane)
        if lane is None and len(view.lanes) >= MAX_LANES:
            raise BadMessageError(OVER_LIMIT, f"more than {MAX_LANES} lanes of {rec.host!r}")
        if lane is not None and len(lane.iv) >= MAX_INTERVALS:
            raise BadMessageError(OVER_LIMIT, f"more than {MAX_INTERVALS} gaps in a lane of "
                                  f"{rec.host!r}")  # fmt: skip

    def host(self, name: str) -> HostView:
        view = self.hosts.get(name)
        if view is None:
            view = self.hosts[name] = HostView(name, deliveries=self.deliveries)
        return view

    def add(
        self, rec: Received, nbytes: int, ts_ns: list[int] | None = None, at: int = 0
    ) -> HostView:
        """Count one message, seen at stream sequence ``at`` (0: not known); ``ts_ns``
        (its events' wall-clock ns) when known. BadMessageError (nothing counted) when
        it would pass a bound (class doc) or its tcp/disk lines lack their fields."""
        self._check(rec)
        busiest = self.hosts[rec.host].busiest if rec.host in self.hosts else Busiest()
        if rec.records is not None and self.layout is not None:
            busiest.add_records(rec.records, self.layout)
        elif rec.type in ("tcp", "disk") and rec.lines:
            busiest.add_lines(rec.type, rec.lines)
        self.messages += 1
        view = self.host(rec.host)
        view.busiest = busiest
        view.messages += 1
        view.last_arrival = time.time()
        if rec.stats is not None:
            run = (rec.boot, rec.run)
            view.runs[run] = rec.stats
            if rec.stats.get("kind") == "summary":
                view.finished.add(run)
            return view
        view.events += rec.count
        view.bytes += nbytes
        view.by_type[rec.type] = view.by_type.get(rec.type, 0) + rec.count
        lane = view.lanes.get(rec.lane)
        if lane is None:
            lane = view.lanes[rec.lane] = SeqSet()
        lane.add(rec.first, rec.first + rec.count - 1, at)
        if ts_ns:
            view.newest_ts_ns = max(view.newest_ts_ns, max(ts_ns))
        return view

    def tick(self) -> None:
        """Close an interval: per-host events/s since the last tick."""
        now = time.monotonic()
        dt = max(now - self._mark_time, 1e-6)
        for view in self.hosts.values():
            view.busiest.tick(dt)
            view.rate = (view.events - view._mark) / dt
            view._mark = view.events
        self._mark_time = now

    def records(self) -> list[dict[str, Any]]:
        now = time.time()
        return [self.hosts[h].record(now) for h in sorted(self.hosts)]


__all__ = ["MAX_HOSTS", "OVER_LIMIT", "Fleet", "HostView"]
