"""``--metrics [ADDR:]PORT``: a Prometheus ``/metrics`` endpoint (prometheus-client).

:class:`MetricsServer` serves what a ``collect`` callable returns at scrape time: the
numbers are read from the running command's own counters when Prometheus asks, so
nothing is added to the event path. :class:`Families` builds the metric families
(counters end in ``_total``); the commands' builders live next to their data
(:func:`trace_families` here, the collector's in :mod:`ringtool.export.fleet`).

Labels a user filters by: ``host`` (the ``--host-name``), ``source`` (exec, open,
syscalls, net), ``type`` (exec, exit, fork, open, syscall, net), ``cpu``.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ringtool.errors import ExportError
from ringtool.event.registry import SOURCE_OF  # type -> source: the ``source`` label
from ringtool.export.accounting import TraceTotals


class Families:
    """Collects metric families for one scrape."""

    def __init__(self) -> None:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        self._counter = CounterMetricFamily
        self._gauge = GaugeMetricFamily
        self.out: list[Any] = []

    def add(
        self,
        kind: str,
        name: str,
        doc: str,
        labels: tuple[str, ...],
        samples: Iterable[tuple[tuple[Any, ...], float]],
    ) -> None:
        """A ``counter`` or ``gauge`` family ``name`` with ``(label values, value)``."""
        cls = self._counter if kind == "counter" else self._gauge
        fam = cls(name, doc, labels=list(labels))
        for values, value in samples:
            fam.add_metric([str(v) for v in values], float(value))
        self.out.append(fam)


class _Collector:
    def __init__(self, build: Callable[[Families], None]) -> None:
        self.build = build

    def collect(self) -> Iterable[Any]:
        fams = Families()
        self.build(fams)
        return fams.out


class MetricsServer:
    """``http://ADDR:PORT/metrics``, filled by ``build(families)`` on every scrape, served
    by one thread with bounded connections and an idle timeout
    (:class:`~ringtool.export.metrics_http.MetricsHttpServer`). :meth:`close` stops it."""

    def __init__(self, addr: tuple[str, int], build: Callable[[Families], None]) -> None:
        from prometheus_client import CollectorRegistry

        from ringtool.export.metrics_http import MetricsHttpServer

        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(build))  # type: ignore[arg-type]
        host, port = addr
        try:
            self._server = MetricsHttpServer(host, port, self.registry)
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ExportError(f"--metrics {host}:{port}: cannot listen ({why})") from None
        self.port = self._server.port

    def close(self) -> None:
        self._server.close()


def trace_families(
    fams: Families, host: str, stats: TraceTotals, export: Mapping[str, Any] | None
) -> None:
    """The metrics of ``ringtool trace`` from its :class:`~ringtool.trace.report.stats.TraceStats`
    and the exporter's counters (when exporting)."""
    by_type = dict(stats.by_type)
    fams.add(
        "counter",
        "ringtool_events",
        "Events delivered to ringtool by the kernel",
        ("host", "source", "type"),
        (((host, SOURCE_OF.get(t, t), t), n) for t, n in sorted(by_type.items())),
    )
    fams.add(
        "counter",
        "ringtool_cpu_events",
        "Events delivered, per CPU ring",
        ("host", "cpu"),
        (((host, c), n) for c, n in enumerate(list(stats.per_cpu))),
    )
    fams.add(
        "counter",
        "ringtool_dropped",
        "Events the kernel could not put in a full ring (failed reservations)",
        ("host", "source", "cpu"),
        (
            ((host, src, c), n)
            for src, per in dict(stats.drops_source_cpu).items()
            for c, n in enumerate(per)
            if src != "net"
        ),
    )
    fams.add(
        "counter",
        "ringtool_lost",
        "Perf samples lost (PERF_RECORD_LOST)",
        ("host", "source", "cpu"),
        (((host, "net", c), n) for c, n in sorted(dict(stats.lost_cpu).items())),
    )
    fams.add(
        "gauge",
        "ringtool_ring_fill_ratio",
        "Largest fill of each CPU's ring in the last interval, 0..1",
        ("host", "cpu"),
        (((host, c), dict(stats.fill_cpu).get(c, 0.0)) for c in range(stats.ncpu)),
    )
    if export is not None:
        export_families(fams, host, export)


def export_families(fams: Families, host: str, export: Mapping[str, Any]) -> None:
    """The exporter's counters (:meth:`ExportCounters.snapshot` + queue state)."""
    fams.add(
        "counter",
        "ringtool_exported",
        "Events acknowledged by the JetStream stream",
        ("host", "cpu"),
        (((host, c), n) for c, n in enumerate(export["exported_per_cpu"])),
    )
    fams.add(
        "counter",
        "ringtool_export_dropped",
        "Events that never reached the stream (queue full, refused, left at exit)",
        ("host", "cpu"),
        (((host, c), n) for c, n in enumerate(export["export_dropped_per_cpu"])),
    )
    fams.add(
        "counter",
        "ringtool_export_dropped_by_reason",
        "Events that never reached the stream, by reason (docs/fleet.md)",
        ("host", "reason"),
        (((host, r), n) for r, n in sorted(export["export_dropped_by_reason"].items())),
    )
    fams.add(
        "counter",
        "ringtool_export_bytes",
        "Message body bytes acknowledged",
        ("host",),
        [((host,), export["export_bytes"])],
    )
    fams.add(
        "counter",
        "ringtool_export_messages",
        "Messages acknowledged",
        ("host",),
        [((host,), export["export_messages"])],
    )
    fams.add(
        "gauge",
        "ringtool_export_queue_bytes",
        "Bytes waiting for the broker",
        ("host",),
        [((host,), export.get("export_queue_bytes", 0))],
    )
    fams.add(
        "gauge",
        "ringtool_export_connected",
        "1 while connected to the broker",
        ("host",),
        [((host,), int(bool(export.get("export_connected"))))],
    )


def collect_families(fams: Families, fleet: Any) -> None:
    """The metrics of ``ringtool collect`` from its :class:`~ringtool.export.fleet.Fleet`."""
    rows = fleet.records()
    fams.add(
        "counter",
        "ringtool_collect_events",
        "Events read from the stream",
        ("host", "type"),
        (((r["host"], t), n) for r in rows for t, n in r["by_type"].items()),
    )
    fams.add(
        "counter",
        "ringtool_collect_bytes",
        "Message body bytes read",
        ("host",),
        (((r["host"],), r["bytes"]) for r in rows),
    )
    fams.add(
        "gauge",
        "ringtool_collect_gaps",
        "Sequence numbers missing below the highest read (export drops, unread)",
        ("host",),
        (((r["host"],), r["gaps"]) for r in rows),
    )
    fams.add(
        "counter",
        "ringtool_collect_duplicates",
        "Events read more than once",
        ("host",),
        (((r["host"],), r["duplicates"]) for r in rows),
    )
    fams.add(
        "gauge",
        "ringtool_collect_lag_seconds",
        "Wall-clock age of the newest event read from the host",
        ("host",),
        (((r["host"],), r["lag_s"]) for r in rows),
    )
    fams.add(
        "gauge",
        "ringtool_collect_pending_messages",
        "Consumer lag: messages in the stream not yet read and acknowledged",
        (),
        [((), fleet.pending)],
    )
    fams.add(
        "counter",
        "ringtool_collect_bad_messages",
        "Messages refused (malformed, forged, over a bound), by reason",
        ("reason",),
        (((reason,), n) for reason, n in sorted(fleet.bad_reasons.items())),
    )
    for key, doc in (
        ("dropped", "Kernel ring drops reported by the host"),
        ("lost", "Perf samples lost, reported by the host"),
        ("export_dropped", "Events the host could not export"),
        ("exported", "Events the host exported"),
    ):
        fams.add(
            "counter",
            f"ringtool_host_{key}",
            doc,
            ("host",),
            (((r["host"],), r[key]) for r in rows),
        )


__all__ = ["Families", "MetricsServer", "collect_families", "export_families", "trace_families"]
