"""``ringtool bridge --export/--metrics``: the KMES bridge's events to JetStream too.

:func:`bridge_hook` returns a :class:`BridgeHook` (or a :class:`NoHook` without either
flag). It sets itself as the bridge's ``tap`` (:class:`ringtool.bridge.core.
KmesBridge` calls it with every submitted event, in the submitting thread), and the
bridge loop calls :meth:`BridgeHook.flush` after each ``bridge.flush()``: the events
tapped since are numbered per lane (CPU, type), rendered as JSON lines (``jsonl/1``:
``type``, ``ts``, ``cpu``, ``origin``, then the fields :mod:`ringtool.kmes.events`
decodes) and handed to the same :class:`~ringtool.export.publisher.Publisher` as
``trace --export``, with the same accounting: every tapped event ends ``exported`` or
``export_dropped``. Once a second a ``stats/1`` message carries the counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import deque
from typing import Any

from ringtool.errors import ExportError
from ringtool.event.safe_text import printable
from ringtool.export.accounting import ExportCounters
from ringtool.export.batcher import Batcher
from ringtool.export.config import display_url
from ringtool.export.publisher import Publisher
from ringtool.export.run_origin import new_origin
from ringtool.export.trace_hook import HookOptions, hook_options
from ringtool.export.wire import Encoder, Lines
from ringtool.kmes.events import decode


class NoHook:
    """Neither ``--export`` nor ``--metrics``: every call does nothing."""

    def flush(self) -> None:
        pass

    def close(self, bridge_stats: dict[int, dict[str, int]]) -> None:
        pass


class BridgeHook:
    """See the module doc."""

    def __init__(self, opts: HookOptions, bridge: Any) -> None:
        from ringtool.event.decode import Decoder
        from ringtool.event.layout import load_layout

        self.opts = opts
        self.bridge = bridge
        self._tapped: deque[tuple[int, int, int, bytes, float]] = deque()
        self._lock = threading.Lock()
        self.events = 0
        self.by_type: dict[str, int] = {}
        self._next_stats = time.monotonic() + 1.0
        self._stats_n = 0
        self.publisher: Publisher | None = None
        self.metrics: Any = None
        ncpu = max(bridge.cpus) + 1
        self.counters = ExportCounters(ncpu)
        cfg = opts.export
        if cfg is not None:
            if cfg.fmt != "json":
                raise ExportError("--export-format rows: the bridge exports JSON lines only")
            decoder = Decoder(load_layout())
            self.origin = new_origin(cfg, "bridge", decoder.offset_ns)
            self.encoder = Encoder(self.origin, "json", cfg.subject_prefix, decoder)
            self.batcher = Batcher({}, cfg.batch_events or 2048)
            self.publisher = Publisher(cfg, self.encoder, self.counters, self._note)
            error = self.publisher.start()
            if error is not None and not cfg.optional:
                self.publisher.close()
                raise ExportError(f"--export {display_url(cfg.url)}: {error}")
            if error is not None:
                self._note(f"export: {display_url(cfg.url)} unreachable ({error}); the bridge "
                           "goes on, events count as export_dropped until it answers")  # fmt: skip
        if opts.metrics is not None:
            from ringtool.export.metrics import MetricsServer

            self.metrics = MetricsServer(opts.metrics, self._families)
        bridge.tap = self._tap

    def _note(self, text: str) -> None:
        # may quote the broker's reply: never raw on a terminal
        print(f"ringtool bridge: {printable(text)}", file=sys.stderr, flush=True)

    def _tap(self, cpu: int, origin: int, event_type: int, payload: bytes) -> None:
        self._tapped.append((cpu, origin, event_type, payload, time.time()))

    def flush(self) -> None:
        """Number, render and hand over what was tapped since the last call."""
        lanes: dict[tuple[int, str], Lines] = {}
        with self._lock:
            while self._tapped:
                cpu, origin, etype, payload, ts = self._tapped.popleft()
                name, fields = decode(etype, payload)
                obj = {"type": name, "ts": ts, "cpu": cpu, "origin": origin,
                       **(fields or {"payload_hex": payload.hex()})}  # fmt: skip
                lanes.setdefault((cpu, name), Lines()).append(json.dumps(obj))
                self.events += 1
                self.by_type[name] = self.by_type.get(name, 0) + 1
            if self.publisher is not None:
                for (cpu, name), lines in lanes.items():
                    for batch in self.batcher.lines(cpu, name, lines):
                        self.publisher.offer(batch)
                if time.monotonic() >= self._next_stats:
                    self._next_stats = time.monotonic() + 1.0
                    self.publisher.offer_stats(self._stats_message("stats"))

    def _stats_message(self, kind: str) -> Any:
        self._stats_n += 1
        o = self.origin
        rec = {"kind": kind, "host": o.host, "boot": o.boot, "run": o.run, "source": "bridge",
               "time": time.time(), "events": self.events, "dropped": 0, "lost": 0,
               **self.counters.snapshot()}  # fmt: skip
        return self.encoder.stats(rec, self._stats_n)

    def _families(self, fams: Any) -> None:
        from ringtool.event.registry import SOURCE_OF
        from ringtool.export.metrics import export_families

        host = self.opts.host
        fams.add(
            "counter",
            "ringtool_events",
            "Events the bridge took from its sources",
            ("host", "source", "type"),
            (((host, SOURCE_OF.get(t, "bridge"), t), n) for t, n in dict(self.by_type).items()),
        )
        per_cpu = self.bridge.stats()
        for key, doc in (
            ("written", "Events written into the KMES buffers"),
            ("dropped", "Events the KMES writer could not write"),
            ("overwritten", "Events overwritten before every reader took them"),
        ):
            fams.add(
                "counter",
                f"ringtool_kmes_{key}",
                doc,
                ("host", "cpu"),
                (((host, c), s[key]) for c, s in per_cpu.items()),
            )
        if self.publisher is not None:
            export_families(
                fams,
                host,
                {
                    **self.counters.snapshot(),
                    "export_queue_bytes": self.publisher.queue.nbytes,
                    "export_connected": self.publisher.connected,
                },
            )

    def close(self, bridge_stats: dict[int, dict[str, int]]) -> None:
        """Hand over the rest, drain the publisher, print the export line, stop."""
        self.bridge.tap = None
        self.flush()
        if self.publisher is not None:
            self.publisher.close(lambda: self._stats_message("summary"))
            x = self.counters.snapshot()
            why = ", ".join(f"{k} {v}" for k, v in x["export_dropped_by_reason"].items() if v)
            why = f" ({why})" if why else ""
            self._note(
                f"export: {self.events} events, {x['exported']} exported, "
                f"{x['export_dropped']} export_dropped{why}"
            )
        if self.metrics is not None:
            self.metrics.close()


def bridge_hook(args: argparse.Namespace, bridge: Any) -> BridgeHook | NoHook:
    """The hook for parsed ``bridge`` flags (see the module doc)."""
    opts = hook_options(args)
    return BridgeHook(opts, bridge) if opts.wanted else NoHook()


__all__ = ["BridgeHook", "NoHook", "bridge_hook"]
