"""The exporter with its publisher in this process, for ``ringtool bench export``'s
``nats-json``/``nats-rows`` rows (the baseline ``trace --export`` is compared to).

:class:`ExportSink` is what :class:`~ringtool.export.proc_sink.ProcExportSink` is with
the publisher in the same process. :meth:`~ExportSink.publish` gets each drained batch
(cut into numbered lane batches, handed to the
:class:`~ringtool.export.publisher.Publisher` without blocking),
:meth:`~ExportSink.tick` the interval's :class:`~ringtool.trace.report.stats.TraceStats`
(it stores the export counters in ``stats.export``, publishes a ``stats/1`` message,
and returns the notes to show), :meth:`~ExportSink.close` drains and stores the final
counts.

Accounting: every event handed over ends as exported or export_dropped, so after close
``stats.total == exported + export_dropped``.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

from ringtool.errors import ExportError
from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.export.accounting import ExportCounters, TraceTotals
from ringtool.export.batcher import Batcher
from ringtool.export.config import ExportConfig, display_url
from ringtool.export.publisher import Publisher
from ringtool.export.run_origin import host_stats, new_origin, take_all
from ringtool.export.wire import Encoder, Message


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


__all__ = ["ExportSink"]
