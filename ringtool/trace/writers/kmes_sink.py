"""``--kmes SOCKET``: publish every trace record through an in-process KMES bridge.

:class:`KmesSink` runs a :class:`ringtool.bridge.core.KmesBridge` over the online
CPUs that serves the attach protocol on ``SOCKET`` (docs/kmes.md), so ``ringtool
kmes-read --socket SOCKET`` (or any KMES consumer) sees the trace while it runs.
Each record becomes one KMES event on the CPU that produced it:

* ``event_type`` = :data:`TRACE_EVENT_BASE` + the record's ``h.type`` (exec 0x7401,
  exit 0x7402, ... net 0x7406), a range of its own next to the bridge's types;
* ``origin_class`` 1 (BPF ring buffer) or 2 (perf event array, net);
* payload: the raw ``struct trace_event`` (net: ``struct trace_net`` + packet bytes),
  as bpf/trace_event.h declares them.

The capacity comes from the bridge's configuration (its defaults when none).
"""

from __future__ import annotations

import contextlib
import time

from ringtool.event.kmes_types import ORIGIN_PERF, ORIGIN_RINGBUF, TRACE_EVENT_BASE
from ringtool.event.records import Records
from ringtool.kernel.cpus import online_cpus

RESTORE_INTERVAL = 0.25  # seconds between re-stores of the buffers' static fields


class KmesSink:
    """Owns the bridge; :meth:`publish` queues and flushes one batch per call."""

    def __init__(self, socket_path: str) -> None:
        from ringtool.bridge.core import KmesBridge

        self.bridge = KmesBridge(online_cpus(), socket_path=socket_path)
        try:
            self.bridge.start()
        except BaseException:
            self.bridge.close()
            raise
        self.published = 0
        self._next_restore = 0.0

    def publish(self, records: Records) -> None:
        """Queue the batch's records (one KMES event each) and flush."""
        arr, net = records.events, records.net
        n = len(arr)
        if n:
            raw = arr.tobytes()
            size = arr.dtype.itemsize
            cpus = arr["h"]["cpu"].tolist()
            types = arr["h"]["type"].tolist()
            submit = self.bridge.submit
            for i in range(n):
                payload = raw[i * size : (i + 1) * size]
                submit(cpus[i], ORIGIN_RINGBUF, TRACE_EVENT_BASE + types[i], payload)
        if len(net):
            submit_type = TRACE_EVENT_BASE + 6
            for i, cpu in enumerate(net.rec["h"]["cpu"].tolist()):
                self.bridge.submit(cpu, ORIGIN_PERF, submit_type, net.sample(i))
        if n or len(net):
            self.published += n + len(net)
            self.bridge.flush()
        now = time.monotonic()
        if now >= self._next_restore:  # undo a consumer's scribbles on cache line 0
            self._next_restore = now + RESTORE_INTERVAL
            self.bridge.service()

    def tick(self, stats: object) -> list[str]:
        return []

    def close(self, stats: object = None) -> None:
        """Stop the bridge; its errors are not the trace's (the trace's own data is
        complete)."""
        with contextlib.suppress(Exception):
            self.bridge.close()


__all__ = ["KmesSink"]
