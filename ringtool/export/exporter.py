"""``trace --export``: the runner's sink that hands every event to the publisher.

:class:`ExportSink` is built once the sources run. :meth:`~ExportSink.publish` gets
each drained batch (cut into numbered lane batches, handed to the
:class:`~ringtool.export.publisher.Publisher` without blocking),
:meth:`~ExportSink.tick` the interval's :class:`~ringtool.trace.stats.TraceStats`
(it stores the export counters in ``stats.export`` for the outputs, publishes a
``stats/1`` message, and returns the notes to show), :meth:`~ExportSink.close` drains
and stores the final counts.

Accounting: every event the trace delivered is handed over, so after close
``stats.total == exported + export_dropped`` and, with the kernel's counts,
``generated == exported + export_dropped + dropped + lost``.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections import deque
from typing import Any

from ringtool.errors import ExportError
from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.export.accounting import ExportCounters, TraceTotals
from ringtool.export.batcher import Batcher
from ringtool.export.config import ExportConfig, boot_id, display_url
from ringtool.export.publisher import Publisher
from ringtool.export.wire import Encoder, Message, Origin


def new_origin(cfg: ExportConfig, source: str, realtime_offset_ns: int) -> Origin:
    return Origin(cfg.host, boot_id(), secrets.token_hex(6), source, realtime_offset_ns)


def take_all(notes: deque[str]) -> list[str]:
    """Empty ``notes`` (appended by other threads), oldest first."""
    out = []
    while notes:
        out.append(notes.popleft())
    return out


def host_stats(origin: Origin, stats: TraceTotals, kind: str,
               record: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The body of a ``stats/1`` message of ``kind`` (``stats``, ``summary``): the
    trace's counts and the exporter's ``record``."""
    o = origin
    return {
        "kind": kind, "host": o.host, "boot": o.boot, "run": o.run, "source": o.source,
        "time": time.time(), "events": stats.total, "dropped": stats.dropped,
        "lost": stats.lost, "dropped_per_cpu": list(stats.drops_cpu),
        "lost_per_cpu": {str(k): v for k, v in stats.lost_cpu.items()},
        "events_per_s": round(stats.rate_total, 1),
        **record,
    }  # fmt: skip


class ExportSink:
    """See the module doc. ``ncpu``: possible CPUs (the counters' length)."""

    def __init__(self, cfg: ExportConfig, decoder: Decoder, ncpu: int) -> None:
        self.cfg = cfg
        self.origin = new_origin(cfg, "trace", decoder.offset_ns)
        self.counters = ExportCounters(ncpu)
        self.batcher = Batcher(
            decoder.types, cfg.batch_events or (8192 if cfg.fmt == "rows" else 2048)
        )
        encoder = Encoder(self.origin, cfg.fmt, cfg.subject_prefix, decoder)
        self.encoder = encoder
        self._notes: deque[str] = deque()
        self.publisher = Publisher(cfg, encoder, self.counters, self._notes.append)
        self._stats_n = 0
        self._last: dict[str, Any] = {}
        error = self.publisher.start()
        if error is not None:
            if not cfg.optional:
                self.publisher.close()
                raise ExportError(f"--export {display_url(cfg.url)}: {error}")
            self._notes.append(
                f"export: {display_url(cfg.url)} unreachable ({error}); tracing goes on, "
                "events count as export_dropped until it answers (--export-optional)"
            )

    def publish(self, records: Records) -> None:
        for batch in self.batcher.split(records):
            self.publisher.offer(batch)

    def notes(self) -> list[str]:
        return take_all(self._notes)

    def tick(self, stats: TraceTotals) -> list[str]:
        """Store the counters in ``stats.export``, publish a stats message, return the
        notes that came since the last tick."""
        stats.export = self.record()
        self._last = self._host_stats(stats, "stats")
        self._stats_n += 1
        self.publisher.offer_stats(self.encoder.stats(self._last, self._stats_n))
        return self.notes()

    def record(self) -> dict[str, Any]:
        snap = self.counters.snapshot()
        snap["export_queue_bytes"] = self.publisher.queue.nbytes
        snap["export_connected"] = self.publisher.connected
        return snap

    def _host_stats(self, stats: TraceTotals, kind: str) -> dict[str, Any]:
        return host_stats(self.origin, stats, kind, self.record())

    def close(self, stats: TraceTotals | None = None) -> None:
        """Drain (at most ``drain_s``), count the rest, publish the summary message,
        store the final counts in ``stats.export`` and print pending notes."""

        def final() -> Message:
            self._stats_n += 1
            rec = self._host_stats(stats, "summary") if stats is not None else self._last
            return self.encoder.stats({**rec, "kind": "summary"}, self._stats_n)

        self.publisher.close(final)
        if stats is not None:
            stats.export = self.record()
        for note in self.notes():
            print(f"ringtool: {printable(note)}", file=sys.stderr)  # may quote the broker


__all__ = ["ExportSink", "host_stats", "new_origin", "take_all"]
