"""The JSON-lines encoding of trace events: one JSON object per record, formatted a
whole column at a time (:func:`json_lines`: per type, one numpy/orjson conversion per
field, then one join per line; no dict per record); each line parses to what
``json.dumps(decoder.decode(...))`` gives. ``trace --json`` prints it and the fleet
export publishes it (one encoder, so both are byte-equal).

Every line is printable text: a character that :meth:`str.isprintable` rejects (a
control character such as ESC, DEL, a C1 control, a bidi override: anything a traced
process may put in a file name or comm) is written as its ``\\uXXXX`` escape, so
``json.loads`` gives back the exact string while a terminal showing the lines sees no
escape sequence. Bytes that are not UTF-8 arrive as ``\\xNN`` text
(:func:`ringtool.event.decode.cstr`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

import numpy as np

from ringtool.event.columns import (
    TypeGroup,
    by_type,
    column,
    cstrings,
    float_texts,
    in_array_order,
    number_texts,
    wall_seconds,
)
from ringtool.event.decode import Decoder
from ringtool.event.fields import Field, fields_of
from ringtool.event.line_pieces import Piece, lines_of, text_of
from ringtool.event.records import Records
from ringtool.event.safe_text import printable_json as printable_line

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
_str = encode_basestring  # a JSON string literal (C implementation)
#: Field kinds whose values are strings from a small set (a packet's addresses,
#: protocol, direction, comm; a block device's numbers and name, its operation).
NAMES = frozenset(("addr", "proto", "direction", "packet_comm", "blk_dev", "blk_disk", "blk_op"))


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
    if f.kind in NAMES:  # a few distinct strings: each written once
        names = decoder.values(rec, f)
        literals = {v: _str(v) for v in set(names)}
        if len(literals) == 1:
            return literals[names[0]], False
        return [literals[v] for v in names], False
    if f.kind == "call" and (column(rec, f.column) == column(rec, f.column)[0]).all():
        return _value(decoder.values(rec[:1], f)[0]), False  # one syscall for all
    jsons = list(map(_value, decoder.values(rec, f)))
    return (jsons[0] if jsons.count(jsons[0]) == len(jsons) else jsons), False


def group_lines(decoder: Decoder, g: TypeGroup, keys: Sequence[str] | None) -> list[str]:
    """The JSON lines of one type's records (``keys``: only these, in this order); a
    field with one value for all of them is part of the constant text."""
    return lines_of(_pieces(decoder, g, keys), len(g.rec))


def group_text(decoder: Decoder, g: TypeGroup, keys: Sequence[str] | None) -> str:
    """:func:`group_lines` as one text, each line ending in a newline, without a
    string per line (:func:`ringtool.event.line_pieces.text_of`)."""
    return text_of(_pieces(decoder, g, keys), len(g.rec))


def _pieces(decoder: Decoder, g: TypeGroup, keys: Sequence[str] | None) -> list[Piece]:
    """The pieces of the lines of ``g``: constant texts and per-record columns."""
    spec = {f.key: f for f in fields_of(g.name)}
    wanted = keys if keys is not None else ["type", *spec]
    pieces: list[Piece] = []  # constant text and per-record columns, alternating
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
        pieces += [text + '"' if quote else text, col]
        text = '"' if quote else ""
    pieces.append(text + "}")
    return pieces


def json_lines(
    decoder: Decoder, arr: np.ndarray[Any, Any], keys: Sequence[str] | None = None
) -> list[str]:
    """One JSON line per record of ``arr`` (events or packets), in array order; each
    parses to the record's :meth:`Decoder.decode` dict (restricted to ``keys``, in
    their order). Not yet made printable (see :func:`printable_line`)."""
    return in_array_order(
        arr, decoder.types, lambda g: group_lines(decoder, g, keys), decoder.views
    )


def batch_text(decoder: Decoder, records: Records, keys: Sequence[str] | None) -> str:
    """The printable JSON lines of a batch (its events in array order, then its
    packets), each ending in a newline; ``""`` for an empty batch. ``keys``: only
    these keys, in this order (None: all)."""
    arrays = records.arrays()
    if len(arrays) == 1:
        groups = by_type(arrays[0], decoder.types, decoder.views)
        if len(groups) == 1 and groups[0].positions is None:  # one type, in order
            return _printable_text(group_text(decoder, groups[0], keys))
    lines = [line for arr in arrays for line in json_lines(decoder, arr, keys)]
    if not lines:
        return ""
    return _printable_text("\n".join(lines) + "\n")


def _printable_text(text: str) -> str:
    """JSON lines, each ending in a newline, made printable (see the module doc)."""
    # JSON already escapes C0 controls: ASCII text without DEL is printable (two
    # C-level checks); anything else gets the per-character pass, line by line (a
    # JSON text holds no raw newline)
    if not text.isascii() or "\x7f" in text:
        text = "\n".join(map(printable_line, text[:-1].split("\n"))) + "\n"
    return text


def object_line(obj: dict[str, Any]) -> str:
    """One JSON object (a start, stats, summary or note line) as printable text."""
    return printable_line(_dumps(obj))


__all__ = ["batch_text", "json_lines", "object_line", "printable_line"]
