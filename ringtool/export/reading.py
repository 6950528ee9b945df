"""Reading exported messages back (the format: :mod:`ringtool.export.wire`).

:func:`decode` turns one message (headers, body) into a :class:`Received`: its origin,
lane and sequence range, the events as the JSON lines ``ringtool trace --json``
prints (``rows/1`` is decoded with the single layout of ``bpf/trace_event.h``), or
the record of a ``stats/1`` message. Anything that is not a version 1 ringtool message
is an :class:`~ringtool.errors.ExportError`, never another exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.errors import ExportError
from ringtool.event.decode import Decoder
from ringtool.event.layout import TraceLayout
from ringtool.export.wire import (
    H_BOOT,
    H_CLOCK,
    H_CPU,
    H_DATA_LEN,
    H_FORMAT,
    H_HOST,
    H_RUN,
    H_SEQ,
    H_SOURCE,
    H_TYPE,
    JSONL,
    ROWS,
    SAMPLE_LEN,
    STATS,
    expand_rows,
    json_lines,
)


@dataclass
class Received:
    """One decoded message. Events: ``lines`` (JSON lines as ``trace --json`` writes
    them) and ``ts_ns`` (wall-clock ns per event); ``stats``: the record of a
    ``stats/1`` message."""

    host: str
    boot: str
    run: str
    source: str
    type: str
    fmt: str
    cpu: int = -1
    first: int = 0
    count: int = 0
    lines: list[str] = field(default_factory=list)
    ts_ns: list[int] = field(default_factory=list)
    stats: dict[str, Any] | None = None

    @property
    def lane(self) -> tuple[str, str, int, str]:
        return (self.boot, self.run, self.cpu, self.type)


def _need(headers: dict[str, str], key: str) -> str:
    value = headers.get(key)
    if value is None:
        raise ExportError(f"message without the {key} header: not a ringtool message")
    return value


def _int(headers: dict[str, str], key: str) -> int:
    try:
        return int(_need(headers, key))
    except ValueError:
        raise ExportError(f"header {key}={headers[key]!r} is not a number") from None


def decode(headers: dict[str, str] | None, body: bytes, decoders: DecoderCache) -> Received:
    """A message as :class:`Received`; :class:`ExportError` when it is not a version 1
    ringtool message (unknown format, missing header, body not matching its count)."""
    h = headers or {}
    fmt = _need(h, H_FORMAT)
    rec = Received(_need(h, H_HOST), _need(h, H_BOOT), _need(h, H_RUN), _need(h, H_SOURCE),
                   _need(h, H_TYPE), fmt)  # fmt: skip
    if fmt == STATS:
        try:
            rec.stats = json.loads(body)
        except ValueError:
            raise ExportError("stats/1 body is not JSON") from None
        if not isinstance(rec.stats, dict):
            raise ExportError("stats/1 body is not a JSON object")
        return rec
    rec.cpu = _int(h, H_CPU)
    first, _, last = _need(h, H_SEQ).partition("-")
    try:
        rec.first, rec.count = int(first), int(last) - int(first) + 1
    except ValueError:
        raise ExportError(f"header {H_SEQ}={h[H_SEQ]!r} is not first-last") from None
    if rec.first < 1 or rec.count < 1:
        raise ExportError(f"header {H_SEQ}={h[H_SEQ]!r} is not a range of sequence numbers")
    offset = _int(h, H_CLOCK)
    if fmt == JSONL:
        _decode_jsonl(rec, body)
    elif fmt == ROWS:
        _decode_rows(rec, body, h, decoders.get(offset))
    else:
        raise ExportError(f"unknown {H_FORMAT} {fmt!r} (this ringtool reads {JSONL}, {ROWS})")
    return rec


def _decode_jsonl(rec: Received, body: bytes) -> None:
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise ExportError("jsonl/1 body is not UTF-8") from None
    lines = text.split("\n")
    if lines[-1] != "" or len(lines) - 1 != rec.count:
        raise ExportError(f"jsonl/1 body has {len(lines) - 1} lines for {rec.count} events")
    rec.lines = lines[:-1]


def event_ts_ns(rec: Received) -> list[int]:
    """Wall-clock ns of each event of ``rec`` (parsed from the lines for jsonl/1)."""
    if not rec.ts_ns and rec.lines:
        try:
            rec.ts_ns = [round(json.loads(line)["ts"] * 1e9) for line in rec.lines]
        except (ValueError, KeyError, TypeError):
            raise ExportError("jsonl/1 line without a numeric ts") from None
    return rec.ts_ns


def _decode_rows(rec: Received, body: bytes, h: dict[str, str], decoder: Decoder) -> None:
    layout = decoder.layout
    if rec.type == "net":
        samples = _split_samples(body)
        if len(samples) != rec.count:
            raise ExportError(f"rows/1 net body has {len(samples)} samples for {rec.count}")
        events = decoder.decode_net([(rec.cpu, s) for s in samples])
        if len(events) != rec.count:
            raise ExportError("rows/1 net sample shorter than struct trace_net")
        rec.ts_ns = [ev["ts_ns"] for ev in events]
        rec.lines = json_lines(decoder, np.empty(0, layout.event), events).decode().splitlines()
        return
    arr = expand_rows(body, rec.count, _int(h, H_DATA_LEN), layout.event)
    rec.ts_ns = (arr["h"]["ts"].astype(np.int64) + decoder.offset_ns).tolist()
    rec.lines = json_lines(decoder, arr, []).decode().splitlines()


def _split_samples(body: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(body):
        if pos + 4 > len(body):
            raise ExportError("rows/1 net body ends inside a length")
        (n,) = SAMPLE_LEN.unpack_from(body, pos)
        if pos + 4 + n > len(body):
            raise ExportError("rows/1 net sample runs past the body")
        out.append(body[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


class DecoderCache:
    """Decoders per realtime offset (one per exporting run), over one layout."""

    def __init__(self, layout: TraceLayout, syscall_name: Any = None) -> None:
        self.layout = layout
        self.syscall_name = syscall_name
        self._by_offset: dict[int, Decoder] = {}

    def get(self, offset_ns: int) -> Decoder:
        d = self._by_offset.get(offset_ns)
        if d is None:
            if len(self._by_offset) > 1024:
                self._by_offset.clear()
            d = Decoder(self.layout, self.syscall_name, realtime_offset_ns=offset_ns)
            self._by_offset[offset_ns] = d
        return d


__all__ = ["DecoderCache", "Received", "decode", "event_ts_ns"]
