"""``--json`` output: JSON lines, one object per event, then stats and a summary.

Line kinds (``type``): ``start`` (sources running, notes), one per event (see
:mod:`ringtool.trace.events`), ``stats`` once per interval, and a final ``summary``
whose ``events`` equals the number of event lines written. A batch of records is
written with one ``write`` and flushed, so a reader (or ``head``) sees lines promptly.
Record lines are formatted straight from :meth:`Decoder.rows` (3x faster than building
dicts for ``json``); each line parses to what ``json.dumps(decoder.decode(...))`` gives.

Every line is printable text: a character that :meth:`str.isprintable` rejects (a
control character such as ESC, DEL, a C1 control, a bidi override: anything a traced
process may put in a file name or comm) is written as its ``\\uXXXX`` escape, so
``json.loads`` gives back the exact string while a terminal showing the lines sees no
escape sequence. Bytes that are not UTF-8 arrive as ``\\xNN`` text
(:func:`ringtool.trace.events.cstr`).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any, TextIO

import numpy as np

from ringtool.trace.events import Decoder, Event
from ringtool.trace.stats import TraceStats

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
_str = encode_basestring  # a JSON string literal (C implementation)
#: Net event keys that are not output (bytes: the packet goes to --pcap).
NET_PRIVATE = frozenset(("payload", "raw", "ts_ns"))


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON escapes a non-BMP character as a UTF-16 surrogate pair
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


def printable_line(line: str) -> str:
    """A JSON text with each non-printable character escaped (see the module doc).
    Outside strings JSON text is printable ASCII, so this only touches string
    contents, where ``\\uXXXX`` means the same character."""
    if line.isprintable():
        return line
    return "".join(ch if ch.isprintable() else _escape_char(ch) for ch in line)


def _value(v: Any) -> str:
    """A field value as JSON, as ``json`` writes it (ints, floats, strings, None)."""
    if isinstance(v, str):
        return _str(v)
    if v is None:
        return "null"
    if isinstance(v, float):
        return repr(v)
    return str(v)


class JsonOutput:
    """Writes JSON lines to ``stream`` (see the module doc)."""

    def __init__(self, stream: TextIO, decoder: Decoder) -> None:
        self.stream = stream
        self.decoder = decoder

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._write([{"type": "start", "sources": sources, "notes": notes}])

    def batch(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None:
        lines = [
            f'{{"type": "{name}", "ts": {t!r}, "cpu": {cpu}, "pid": {pid}, "tid": {tid}, '
            f'"comm": {_str(comm)}{"".join(f", {_str(k)}: {_value(v)}" for k, v in fields)}}}'
            for name, t, cpu, pid, tid, comm, fields in self.decoder.rows(arr)
        ]
        for ev in net:
            lines.append(_dumps({k: v for k, v in ev.items() if k not in NET_PRIVATE}))
        if not lines:
            return
        text = "\n".join(lines)
        # JSON already escapes C0 controls: ASCII text without DEL is printable (two
        # C-level checks); anything else gets the per-character pass
        if not text.isascii() or "\x7f" in text:
            text = "\n".join(map(printable_line, lines))
        self.stream.write(text + "\n")
        self.stream.flush()

    def stats(self, stats: TraceStats) -> None:
        self._write([stats.stats_record()])

    def summary(self, stats: TraceStats) -> None:
        self._write([stats.summary_record()])

    def note(self, text: str) -> None:
        self._write([{"type": "note", "text": text}])

    def _write(self, objs: list[dict[str, Any]]) -> None:
        self.stream.write("\n".join(printable_line(_dumps(o)) for o in objs) + "\n")
        self.stream.flush()


__all__ = ["JsonOutput", "printable_line"]
