"""Trace records as KMES events: their event types and origins, and their decoding.

``ringtool trace --kmes`` publishes each record as one KMES event (see
:mod:`ringtool.trace.writers.kmes_sink`): ``event_type`` = :data:`TRACE_EVENT_BASE` + the
record's ``h.type`` (exec 0x7401, exit 0x7402, ... net 0x7406, mark 0x7407), ``origin_class``
:data:`ORIGIN_RINGBUF` (or :data:`ORIGIN_PERF` for net), the payload the raw
``struct trace_event`` (net: ``struct trace_net`` + packet bytes) of bpf/trace_event.h.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout

TRACE_EVENT_BASE = 0x7400
ORIGIN_RINGBUF = 1
ORIGIN_PERF = 2


class TracePayloads:
    """Decodes the KMES events :class:`KmesSink` publishes (``kmes-read`` uses it),
    from the same single layout definition the tracer reads (bpf/trace_event.h)."""

    def __init__(self) -> None:
        self._layout = load_layout()
        self._decoder = Decoder(self._layout)
        self._net_type = TRACE_EVENT_BASE + self._layout.type_id("net")

    def decode(self, event_type: int, payload: bytes) -> tuple[str, dict[str, Any]] | None:
        """``(type name, fields)`` of a trace event, or None when ``event_type`` is
        not one of the trace's (or the payload is too short for its record)."""
        if not TRACE_EVENT_BASE < event_type < TRACE_EVENT_BASE + 0x100:
            return None
        if event_type == self._net_type:
            net = self._decoder.net_records([(0, payload)])
            if not len(net):
                return None
            fields = self._decoder.decode(net.rec)[0]
            fields["ts_ns"] = int(net.rec["h"]["ts"][0]) + self._decoder.offset_ns
        else:
            dtype = self._layout.event
            if len(payload) < dtype.itemsize:
                return None
            fields = self._decoder.decode(np.frombuffer(payload, dtype, 1))[0]
        return str(fields.pop("type")), fields


__all__ = ["ORIGIN_PERF", "ORIGIN_RINGBUF", "TRACE_EVENT_BASE", "TracePayloads"]
