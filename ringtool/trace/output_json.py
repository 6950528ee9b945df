"""``--json`` output: JSON lines, one object per event, then a summary.

Line kinds (``type``): on stdout (``stream``) one per event (see
:mod:`ringtool.trace.events`) and a final ``summary`` whose ``events`` equals the
number of event lines written (with ``--hist``, the ``hist`` lines after it); on
stderr (``err``) ``start`` (sources running, notes: the ready line), ``stats`` once
per interval and ``note``, so stdout is the events alone. A batch of records is
written with one ``write`` and flushed, so a reader (or ``head``) sees lines promptly.
Record lines are formatted a whole column at a time (:func:`json_lines`: per type, one
numpy/orjson conversion per field, then one join per line; no dict per record); each
line parses to what ``json.dumps(decoder.decode(...))`` gives. ``--fields`` keeps only
the named keys, in that order, in event lines (net ones too).

Every line is printable text: a character that :meth:`str.isprintable` rejects (a
control character such as ESC, DEL, a C1 control, a bidi override: anything a traced
process may put in a file name or comm) is written as its ``\\uXXXX`` escape, so
``json.loads`` gives back the exact string while a terminal showing the lines sees no
escape sequence. Bytes that are not UTF-8 arrive as ``\\xNN`` text
(:func:`ringtool.trace.events.cstr`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from itertools import repeat
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any, TextIO

import numpy as np

from ringtool.trace.batch import (
    Group,
    column,
    cstrings,
    float_texts,
    in_array_order,
    number_texts,
    wall_seconds,
)
from ringtool.trace.events import Decoder, Event
from ringtool.trace.fields import Field, fields_of
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
    """A field value as JSON, as ``json`` writes it (ints, floats, strings, None,
    booleans, lists of strings)."""
    if isinstance(v, str):
        return _str(v)
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, list):
        return _dumps(v)  # type: ignore[no-any-return]
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _texts(decoder: Decoder, rec: np.ndarray[Any, Any], f: Field) -> tuple[list[str] | str, bool]:
    """Field ``f`` of every record as JSON text (one ``str`` when it is the same for
    every record), and whether the texts are the plain contents of string literals
    (the caller adds the quotes)."""
    if f.kind == "int":
        col = column(rec, f.column)
        if (col == col[0]).all():
            return number_texts(col[:1])[0], False
        return number_texts(col), False
    if f.kind == "time":
        return float_texts(wall_seconds(column(rec, f.column), decoder.offset_ns)), False
    if f.kind == "str":
        texts = cstrings(column(rec, f.column))
        values: list[str] | str = texts.values[0] if texts.same else texts.values
        if texts.plain:
            return values, True
        return (_str(values) if isinstance(values, str) else list(map(_str, values))), False
    jsons = list(map(_value, decoder.values(rec, f)))
    return (jsons[0] if jsons.count(jsons[0]) == len(jsons) else jsons), False


def group_lines(decoder: Decoder, g: Group, keys: Sequence[str] | None) -> list[str]:
    """The JSON lines of one type's records (``keys``: only these, in this order); a
    field with one value for all of them is part of the constant text."""
    n = len(g.rec)
    spec = {f.key: f for f in fields_of(g.name)}
    wanted = keys if keys is not None else ["type", *spec]
    pieces: list[Any] = []  # constant text and per-record columns, alternating
    text = "{"
    for key in wanted:
        if key != "type" and key not in spec:
            continue
        text += f"{', ' if text != '{' else ''}{_str(key)}: "
        if key == "type":
            text += _str(g.name)
            continue
        col, quote = _texts(decoder, g.rec, spec[key])
        if isinstance(col, str):
            text += f'"{col}"' if quote else col
            continue
        pieces += [repeat(text + '"' if quote else text, n), col]
        text = '"' if quote else ""
    pieces.append(repeat(text + "}", n))
    return list(map("".join, zip(*pieces, strict=False)))


def json_lines(
    decoder: Decoder, arr: np.ndarray[Any, Any], keys: Sequence[str] | None = None
) -> list[str]:
    """One JSON line per record, in array order; each parses to the record's
    :meth:`Decoder.decode` dict (restricted to ``keys``, in their order). Not yet
    made printable (see :func:`printable_line`)."""
    return in_array_order(arr, decoder.types, lambda g: group_lines(decoder, g, keys))


class JsonOutput:
    """Writes JSON lines to ``stream`` (see the module doc)."""

    def __init__(
        self,
        stream: TextIO,
        decoder: Decoder,
        fields: Sequence[str] | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.stream = stream
        self.decoder = decoder
        #: ``--fields``: the keys of an event line, in this order (None: all)
        self.fields = list(fields) if fields else None
        self.err = err or sys.stderr

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._write([{"type": "start", "sources": sources, "notes": notes}], self.err)

    def batch(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None:
        lines = json_lines(self.decoder, arr, self.fields)
        keys = self.fields
        for ev in net:
            obj = (
                {k: ev[k] for k in keys if k in ev}
                if keys
                else {k: v for k, v in ev.items() if k not in NET_PRIVATE}
            )
            lines.append(_dumps(obj))
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
        self._write([stats.stats_record()], self.err)

    def summary(self, stats: TraceStats) -> None:
        self._write([stats.summary_record()], self.stream)

    def note(self, text: str) -> None:
        self._write([{"type": "note", "text": text}], self.err)

    @staticmethod
    def _write(objs: list[dict[str, Any]], to: TextIO) -> None:
        to.write("\n".join(printable_line(_dumps(o)) for o in objs) + "\n")
        to.flush()


__all__ = ["JsonOutput", "json_lines", "printable_line"]
