"""Reading exported messages back (the format: :mod:`ringtool.export.wire`).

:func:`decode` turns one message (headers, body) into a :class:`Received`: its origin,
lane and sequence range, the events as the JSON lines ``ringtool trace --json``
prints (``rows/1`` is decoded with the single layout of ``bpf/trace_event.h``), or
the counters of a ``stats/1`` message. Anything that is not a version 1 ringtool
message is a :class:`~ringtool.errors.BadMessageError` with its reason (one of the
constants below), never another exception: headers are bounded in length and range,
JSON is parsed with non-finite numbers refused and deep nesting caught.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.errors import BadMessageError, ExportError
from ringtool.event.decode import Decoder
from ringtool.event.layout import TraceLayout
from ringtool.event.records import Records
from ringtool.export.config import is_token
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
    ``stats/1`` message; ``records`` (``rows/1``): the records as the host read them,
    ``offset_ns`` their realtime offset (what ``collect --record`` writes)."""

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
    records: Records | None = None
    offset_ns: int = 0

    @property
    def lane(self) -> tuple[str, str, int, str]:
        return (self.boot, self.run, self.cpu, self.type)


#: Reasons a message is refused (:class:`~ringtool.errors.BadMessageError`).
MISSING = "missing header"
BAD_HEADER = "bad header"
BAD_BODY = "bad body"
BAD_STATS = "bad stats"
UNKNOWN = "unknown format"
FORGED = "forged origin"
#: Header values longer than this are refused (ringtool's own are below 80).
MAX_HEADER = 256
#: Bounds of the numeric headers: CPUs, sequence numbers (a lane's count fits in a
#: signed 64-bit integer), the realtime offset (ns; 2**62 is 146 years).
MAX_CPU = 1 << 16
MAX_SEQ = (1 << 63) - 1
MAX_OFFSET = 1 << 62
#: The counters of a ``stats/1`` body the collector uses (non-negative integers).
STATS_COUNTERS = ("events", "dropped", "lost", "exported", "export_dropped")
STATS_KINDS = ("stats", "summary")
#: A counter above this is not a count of events (2**53: exact in a JSON double).
MAX_COUNTER = 1 << 53


def _need(headers: dict[str, str], key: str) -> str:
    value = headers.get(key)
    if value is None:
        raise BadMessageError(MISSING, f"no {key} header")
    if not isinstance(value, str) or len(value) > MAX_HEADER:
        raise BadMessageError(BAD_HEADER, f"{key} is longer than {MAX_HEADER} characters")
    return value


def _token(headers: dict[str, str], key: str) -> str:
    value = _need(headers, key)
    if not is_token(value):
        raise BadMessageError(BAD_HEADER, f"{key}={value!r} is not 1-64 letters, digits, _ -")
    return value


def _int(headers: dict[str, str], key: str, lo: int, hi: int) -> int:
    text = _need(headers, key)
    try:
        value = int(text)
    except ValueError:
        raise BadMessageError(BAD_HEADER, f"{key}={text!r} is not a number") from None
    if not lo <= value <= hi:
        raise BadMessageError(BAD_HEADER, f"{key}={text!r} is out of range")
    return value


def decode(headers: dict[str, str] | None, body: bytes, decoders: DecoderCache) -> Received:
    """A message as :class:`Received`; :class:`~ringtool.errors.BadMessageError` (an
    :class:`~ringtool.errors.ExportError`) when it is not a version 1 ringtool message
    (unknown format, missing or malformed header, body not matching its count, stats
    that are not counts). Header tokens (host, boot, run, source, type) are checked to be subject
    tokens, numbers to be in range; who sent it is :mod:`ringtool.export.intake`'s."""
    h = headers if isinstance(headers, dict) else {}
    fmt = _need(h, H_FORMAT)
    rec = Received(_token(h, H_HOST), _token(h, H_BOOT), _token(h, H_RUN), _token(h, H_SOURCE),
                   _token(h, H_TYPE), fmt)  # fmt: skip
    if fmt == STATS:
        rec.stats = _stats(body, rec)
        return rec
    if fmt not in (JSONL, ROWS):
        raise BadMessageError(UNKNOWN, f"{H_FORMAT} {fmt!r} (this ringtool reads {JSONL}, {ROWS})")
    rec.cpu = _int(h, H_CPU, 0, MAX_CPU - 1)
    first, _, last = _need(h, H_SEQ).partition("-")
    try:
        rec.first, rec.count = int(first), int(last) - int(first) + 1
    except ValueError:
        raise BadMessageError(BAD_HEADER, f"{H_SEQ}={h[H_SEQ]!r} is not first-last") from None
    if rec.first < 1 or rec.count < 1 or rec.first + rec.count - 1 > MAX_SEQ:
        raise BadMessageError(
            BAD_HEADER, f"{H_SEQ}={h[H_SEQ]!r} is not a range of sequence numbers"
        )
    offset = rec.offset_ns = _int(h, H_CLOCK, -MAX_OFFSET, MAX_OFFSET)
    if fmt == JSONL:
        _decode_jsonl(rec, body)
    else:
        _decode_rows(rec, body, h, decoders.get(offset))
    return rec


def _stats(body: bytes, rec: Received) -> dict[str, Any]:
    """The counters of a ``stats/1`` body: ``kind`` and :data:`STATS_COUNTERS` (missing
    ones 0); the ``host``/``boot``/``run``/``source`` it names must be the headers'."""
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deep
        raise BadMessageError(BAD_STATS, "the body is not JSON") from None
    if not isinstance(obj, dict):
        raise BadMessageError(BAD_STATS, "the body is not a JSON object")
    for key in ("host", "boot", "run", "source"):
        if key in obj and obj[key] != getattr(rec, key):
            raise BadMessageError(FORGED, f"the body's {key} {str(obj[key])[:80]!r} is not the "
                                  f"header's {getattr(rec, key)!r}")  # fmt: skip
    kind = obj.get("kind", "stats")
    if kind not in STATS_KINDS:
        raise BadMessageError(BAD_STATS, f"kind {str(kind)[:80]!r} is not stats or summary")
    out: dict[str, Any] = {"kind": kind}
    for key in STATS_COUNTERS:
        value = obj.get(key, 0)
        if type(value) is not int or not 0 <= value <= MAX_COUNTER:
            raise BadMessageError(BAD_STATS, f"{key} {str(value)[:80]!r} is not a count")
        out[key] = value
    return out


def _decode_jsonl(rec: Received, body: bytes) -> None:
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise BadMessageError(BAD_BODY, "jsonl/1 body is not UTF-8") from None
    lines = text.split("\n")
    if lines[-1] != "" or len(lines) - 1 != rec.count:
        raise BadMessageError(
            BAD_BODY, f"jsonl/1 body has {len(lines) - 1} lines for {rec.count} events"
        )
    rec.lines = lines[:-1]


def event_ts_ns(rec: Received) -> list[int]:
    """Wall-clock ns of each event of ``rec`` (parsed from the lines for jsonl/1:
    :func:`line_ts_ns`)."""
    if not rec.ts_ns and rec.lines:
        rec.ts_ns = [line_ts_ns(json_object(line)) for line in rec.lines]
    return rec.ts_ns


#: |ts| of an event at most (s): its ns must fit in a signed 64-bit integer
MAX_TS_S = 9.2e9


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0:  # inf - inf is NaN: 1e400 parses as inf
        raise ValueError(f"{text[:40]} does not fit a double")
    return value


#: Event lines are read with NaN, Infinity and numbers that overflow a double (1e400)
#: refused: JSON cannot write them back. One decoder (json.loads with arguments makes
#: a new one per call).
_LINES = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)


def json_object(line: str) -> dict[str, Any]:
    """One event line as a JSON object; BadMessageError when it is not one, is nested
    too deep or holds a number JSON cannot write back (NaN, Infinity, 1e400)."""
    try:
        obj = _LINES.decode(line)
    except (ValueError, RecursionError):
        raise BadMessageError(BAD_BODY, "an event line is not JSON") from None
    if not isinstance(obj, dict):
        raise BadMessageError(BAD_BODY, "an event line is not a JSON object")
    return obj


def line_ts_ns(obj: dict[str, Any]) -> int:
    """The ``ts`` (s) of an event line's object, in ns; BadMessageError when it is not
    a finite number of seconds within +-:data:`MAX_TS_S`."""
    ts = obj.get("ts")
    if (type(ts) is not int and type(ts) is not float) or not -MAX_TS_S <= ts <= MAX_TS_S:
        raise BadMessageError(BAD_BODY, f"an event line's ts {str(ts)[:40]!r} is not a time")
    return round(ts * 1e9)


def _decode_rows(rec: Received, body: bytes, h: dict[str, str], decoder: Decoder) -> None:
    layout = decoder.layout
    if rec.type == "net":
        samples = _split_samples(body)
        if len(samples) != rec.count:
            raise BadMessageError(BAD_BODY, f"rows/1 net body has {len(samples)} samples "
                                  f"for {rec.count}")  # fmt: skip
        net = decoder.net_records([(rec.cpu, s) for s in samples])
        if len(net) != rec.count:
            raise BadMessageError(BAD_BODY, "rows/1 net sample shorter than struct trace_net")
        rec.ts_ns = (net.rec["h"]["ts"].astype(np.int64) + decoder.offset_ns).tolist()
        rec.records = Records(np.empty(0, layout.event), net)
        text = json_lines(decoder, rec.records).decode()
    else:
        off = layout.event.fields["data"][1]  # type: ignore[index]
        data_len = _int(h, H_DATA_LEN, 0, layout.event.itemsize - off)
        try:
            arr = expand_rows(body, rec.count, data_len, layout.event)
        except ExportError as exc:
            raise BadMessageError(BAD_BODY, str(exc)) from None
        rec.ts_ns = (arr["h"]["ts"].astype(np.int64) + decoder.offset_ns).tolist()
        rec.records = Records(arr)
        text = json_lines(decoder, rec.records).decode()
    # split on "\n" only: lines are JSON, whose strings may hold U+2028 (splitlines)
    rec.lines = text.split("\n")[:-1]
    if len(rec.lines) != rec.count:
        raise BadMessageError(BAD_BODY, f"rows/1 body decodes to {len(rec.lines)} events "
                              f"for {rec.count}")  # fmt: skip


def _split_samples(body: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(body):
        if pos + 4 > len(body):
            raise BadMessageError(BAD_BODY, "rows/1 net body ends inside a length")
        (n,) = SAMPLE_LEN.unpack_from(body, pos)
        if pos + 4 + n > len(body):
            raise BadMessageError(BAD_BODY, "rows/1 net sample runs past the body")
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


__all__ = [
    "BAD_BODY",
    "BAD_HEADER",
    "BAD_STATS",
    "FORGED",
    "MISSING",
    "UNKNOWN",
    "DecoderCache",
    "Received",
    "decode",
    "event_ts_ns",
    "json_object",
    "line_ts_ns",
]
