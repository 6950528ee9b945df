"""The one object ``ringtool trace``'s runner calls for ``--export`` and ``--metrics``.

The runner holds a :class:`TraceHook` when :class:`HookOptions` ask for either and
calls it at three points: :meth:`~TraceHook.publish` for every drained batch,
:meth:`~TraceHook.tick` once per interval (it returns notes for the output to show),
:meth:`~TraceHook.close` at the end, before the summary is written.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from ringtool.errors import UsageError
from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.export.accounting import TraceTotals
from ringtool.export.config import ExportConfig, default_host


@dataclass(frozen=True)
class HookOptions:
    """``export``: the exporter's settings (None: no ``--export``); ``metrics``:
    ``(addr, port)`` of ``--metrics``; ``host``: the ``host`` label and subject token."""

    export: ExportConfig | None = None
    metrics: tuple[str, int] | None = None
    host: str = ""

    @property
    def wanted(self) -> bool:
        return self.export is not None or self.metrics is not None


def export_config(args: argparse.Namespace) -> ExportConfig | None:
    """The exporter settings of the parsed ``--export`` flags (of
    :mod:`ringtool.cli.export_args`); None without ``--export``, and a UsageError
    (exit 2) when a companion flag comes without it."""
    companions = ("export_optional", "export_creds", "export_tls_ca")
    if args.export is None:
        used = [f"--{c.replace('_', '-')}" for c in companions if getattr(args, c, None)]
        if used:
            raise UsageError(f"{', '.join(used)} need --export URL")
        return None
    return ExportConfig(
        url=args.export, stream=args.export_stream, subject_prefix=args.export_subject_prefix,
        fmt=args.export_format, creds=args.export_creds, tls_ca=args.export_tls_ca,
        host=args.host_name or default_host(), optional=args.export_optional,
        drain_s=args.export_drain, queue_bytes=int(args.export_queue_mb * (1 << 20)),
        replicas=args.export_replicas,
    )  # fmt: skip


def hook_options(args: argparse.Namespace) -> HookOptions:
    """From parsed ``trace``/``bridge`` flags (ExportError for a bad combination)."""
    cfg = export_config(args)
    host = cfg.host if cfg is not None else (args.host_name or default_host())
    return HookOptions(export=cfg, metrics=args.metrics, host=host)


class TraceHook:
    """Export sink and metrics endpoint of one trace run (see module doc)."""

    def __init__(self, opts: HookOptions, decoder: Decoder, ncpu: int) -> None:
        self.opts = opts
        self.sink: Any = None
        self.metrics: Any = None
        self._stats: TraceTotals | None = None
        if opts.export is not None:
            from ringtool.export.proc_sink import ProcExportSink

            self.sink = ProcExportSink(opts.export, decoder, ncpu)
        if opts.metrics is not None:
            from ringtool.export.metrics import MetricsServer

            try:
                self.metrics = MetricsServer(opts.metrics, self._families)
            except BaseException:
                if self.sink is not None:
                    self.sink.close()
                raise

    def _families(self, fams: Any) -> None:
        from ringtool.export.metrics import trace_families

        sink = self.sink
        if self._stats is not None:
            export = sink.record() if sink is not None else None
            trace_families(fams, self.opts.host, self._stats, export)

    def publish(self, records: Records) -> None:
        if self.sink is not None:
            self.sink.publish(records)

    def tick(self, stats: TraceTotals) -> list[str]:
        """Once per interval, after the kernel counters were taken: notes to show."""
        self._stats = stats
        return self.sink.tick(stats) if self.sink is not None else []

    def close(self, stats: TraceTotals | None = None) -> None:
        """Drain the exporter (final counts into ``stats.export``), stop the endpoint."""
        sink, self.sink = self.sink, None  # once: later calls do nothing
        metrics, self.metrics = self.metrics, None
        try:
            if sink is not None:
                sink.close(stats)
        finally:
            if metrics is not None:
                metrics.close()


__all__ = ["HookOptions", "TraceHook", "export_config", "hook_options"]
