"""Where every exported event ends: acknowledged by the stream or counted as dropped.

Each event the exporter is handed ends in exactly one of two counters of its CPU:

* ``exported``: the stream acknowledged the message holding it (a PubAck, also a
  ``duplicate`` one: a resend of a message the stream had already stored);
* ``export_dropped``: it never reached the stream, for one of the ``reasons``:
  ``queue_full`` (the bounded queue in front of the broker was full, e.g. while the
  broker was down), ``refused`` (the stream answered with an error, e.g. its
  ``max_bytes`` with ``discard: new``), ``unsent`` (still queued when the run ended
  and the drain time was up), ``unconfirmed`` (sent, but no acknowledgement came
  before the end: the broker may hold it; see docs/fleet.md), ``publisher_died``
  (``trace --export``'s publisher process died before it confirmed them).

So ``exported + export_dropped == handed`` once the exporter has closed.
``duplicates`` counts the resends the stream recognised by their ``Nats-Msg-Id`` and
did not store again; ``resends`` every send after the first. Thread-safe:
the drain thread counts ``queue_full``, the publisher thread the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

REASONS = ("queue_full", "refused", "unsent", "unconfirmed", "publisher_died")


class ExportCounters:
    """Per-CPU exported / export_dropped counts and message totals (see module doc)."""

    def __init__(self, ncpu: int) -> None:
        self._lock = threading.Lock()
        self.ncpu = ncpu
        self.handed = [0] * ncpu
        self.exported = [0] * ncpu
        self.dropped = [0] * ncpu
        self.reasons = dict.fromkeys(REASONS, 0)
        self.messages = 0
        self.bytes = 0
        self.resends = 0
        self.duplicates = 0
        self.stats_messages = 0

    def _grow(self, cpu: int) -> None:
        if cpu >= self.ncpu:
            extra = cpu + 1 - self.ncpu
            for arr in (self.handed, self.exported, self.dropped):
                arr.extend([0] * extra)
            self.ncpu = cpu + 1

    def hand(self, cpu: int, n: int) -> None:
        """``n`` events of ``cpu`` were given to the exporter."""
        with self._lock:
            self._grow(cpu)
            self.handed[cpu] += n

    def acked(self, cpu: int, n: int, nbytes: int, *, duplicate: bool) -> None:
        """The stream acknowledged a message of ``n`` events, ``nbytes`` of body."""
        with self._lock:
            self._grow(cpu)
            self.exported[cpu] += n
            self.messages += 1
            self.bytes += nbytes
            self.duplicates += int(duplicate)

    def drop(self, cpu: int, n: int, reason: str) -> None:
        """``n`` events of ``cpu`` will never be in the stream (or may be: unconfirmed)."""
        with self._lock:
            self._grow(cpu)
            self.dropped[cpu] += n
            self.reasons[reason] += n

    def duplicate(self) -> None:
        """The stream answered ``duplicate`` to a resend of a message already counted."""
        with self._lock:
            self.duplicates += 1

    def resent(self, n: int = 1) -> None:
        with self._lock:
            self.resends += n

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy (JSON-able): totals, per-CPU lists, reasons."""
        with self._lock:
            return {
                "exported": sum(self.exported),
                "export_dropped": sum(self.dropped),
                "export_dropped_by_reason": dict(self.reasons),
                "exported_per_cpu": list(self.exported),
                "export_dropped_per_cpu": list(self.dropped),
                "export_pending": sum(self.handed) - sum(self.exported) - sum(self.dropped),
                "export_messages": self.messages,
                "export_bytes": self.bytes,
                "export_resends": self.resends,
                "export_duplicates": self.duplicates,
            }


def pending(snapshot: Mapping[str, Any]) -> int:
    """Events handed but not yet acknowledged or dropped."""
    return int(snapshot["export_pending"])


class TraceTotals(Protocol):
    """What the exporter and the metrics endpoint read of a trace's statistics
    (:class:`ringtool.trace.report.stats.TraceStats` satisfies it), and the one field they
    write: ``export``, the exporter's counters for the outputs to show."""

    export: dict[str, Any] | None

    @property
    def total(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def lost(self) -> int: ...
    @property
    def rate_total(self) -> float: ...
    @property
    def by_type(self) -> Mapping[str, int]: ...
    @property
    def per_cpu(self) -> Sequence[int]: ...
    @property
    def drops_cpu(self) -> Sequence[int]: ...
    @property
    def drops_source_cpu(self) -> Mapping[str, Sequence[int]]: ...
    @property
    def lost_cpu(self) -> Mapping[int, int]: ...
    @property
    def fill_cpu(self) -> Mapping[int, float]: ...
    @property
    def ncpu(self) -> int: ...


__all__ = ["REASONS", "ExportCounters", "TraceTotals", "pending"]
