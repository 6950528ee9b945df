"""Cut what one drain turn read into lane batches and number the events.

A lane is (CPU, event type). :class:`Batcher` keeps each lane's next sequence number
(the first event of a lane is 1) and turns a batch's records
(:class:`~ringtool.event.records.Records`: a ``struct trace_event`` array and packets)
into :class:`~ringtool.export.wire.Batch` es of at most ``batch_events`` events, each
a contiguous range of one lane, in the order the CPU's ring delivered them. Numbers
are given when the batch is made, so a batch the queue refuses leaves a gap a reader
sees (and the exporter counts as ``export_dropped``).

Vectorised: one stable argsort of ``cpu << 8 | type`` per array, then slices. The
batches own their records (an array that is a view, e.g. of a mapped ring, is copied):
they outlive the call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ringtool.event.records import NetRecords, Records
from ringtool.export.wire import Batch, Lines

#: Rough bytes a queued packet is counted beyond its sample.
_NET_OVERHEAD = 600


class Batcher:
    """Numbers and groups events (see module doc). Not thread-safe: the drain's."""

    def __init__(self, type_names: dict[int, str], batch_events: int = 2048) -> None:
        self.type_names = type_names
        self.batch_events = max(1, batch_events)
        self._next: dict[tuple[int, str], int] = {}

    def _number(self, cpu: int, kind: str, n: int) -> int:
        first = self._next.get((cpu, kind), 1)
        self._next[(cpu, kind)] = first + n
        return first

    def split(self, records: Records) -> list[Batch]:
        arr, net = records.events, records.net
        out: list[Batch] = []
        if len(arr):
            h = arr["h"]
            key = (h["cpu"].astype(np.int64) << 8) | (h["type"].astype(np.int64) & 0xFF)
            if key[0] == key[-1] and (key == key[0]).all():
                # the batches are kept (queued): a view of a ring is copied
                groups = [(int(key[0]), arr if arr.flags.owndata else arr.copy())]
            else:
                order = np.argsort(key, kind="stable")
                sk = key[order]
                cuts = np.flatnonzero(sk[1:] != sk[:-1]) + 1
                starts = [0, *cuts.tolist()]
                stops = [*cuts.tolist(), len(sk)]
                groups = [(int(sk[a]), arr[order[a:b]]) for a, b in zip(starts, stops, strict=True)]
            for k, rows in groups:
                cpu, t = k >> 8, k & 0xFF
                self._chunks(out, cpu, self.type_names.get(t, f"t{t}"), rows, rows.dtype.itemsize)
        if len(net):
            cpu_col = net.rec["h"]["cpu"]
            cpus, first = np.unique(cpu_col, return_index=True)
            for cpu in cpus[np.argsort(first)].tolist():  # in order of first packet
                # owned copies (queued): only the lane's samples
                self._chunks(out, cpu, "net", net.take(cpu_col == cpu), 0)
        return out

    def lines(self, cpu: int, kind: str, lines: list[str]) -> list[Batch]:
        """Batches of events already rendered as JSON lines (the bridge's)."""
        out: list[Batch] = []
        self._chunks(out, cpu, kind, lines, 0)
        return out

    def _chunks(self, out: list[Batch], cpu: int, kind: str, data: Any, itemsize: int) -> None:
        n = len(data)
        first = self._number(cpu, kind, n)
        step = self.batch_events
        for a in range(0, n, step):
            part = data[a : a + step]
            if itemsize:
                nbytes = len(part) * itemsize
            elif isinstance(data, Lines):
                part = Lines(part)
                nbytes = sum(len(line) for line in part) + 50 * len(part)
            else:
                assert isinstance(part, NetRecords)
                nbytes = int(part.size.sum()) + _NET_OVERHEAD * len(part)
            out.append(Batch(cpu, kind, first + a, len(part), part, nbytes))


__all__ = ["Batcher"]
