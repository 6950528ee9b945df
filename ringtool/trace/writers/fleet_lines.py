"""The records of a ``jsonl/1`` message, for ``collect --record`` (docs/record.md).

A host exporting in the default format sends its events as the JSON lines ``trace
--json`` prints, one type per message. :class:`LineRecords` turns them back into the
layout's records, so that both formats go through the one writer into one table:

1. the message's lines are parsed as one batch with pyarrow under the Arrow schema of
   their type (:mod:`ringtool.event.line_columns`); when that fails (a line that is
   not JSON, not of the type, with a key or value of another type, an empty line),
   each line is looked at alone (Python's JSON parser, its keys and value types
   checked against the schema: :func:`~ringtool.event.line_columns.line_fits`): a
   line of another kind of ``--json`` output (``stats``, ``summary``, ``start``,
   ...: :data:`ringtool.trace.report.json_keys.LINES`) is counted in ``non_event``
   by its kind, a line that is not an event of its message's type or does not fit
   is *rejected*, and the others are parsed as one batch again (halved where
   pyarrow still refuses one: a few calls for a few bad lines);
2. the columns become records (:func:`ringtool.event.line_records.to_records`, whole
   columns); a row holding a value no record holds is rejected;
3. the records are encoded again with the encoder the host used
   (:func:`ringtool.event.json_lines.batch_text`) and compared with the lines, as one
   text: when equal (a host running this encoder), every line is what its record
   gives back. Otherwise each line that differs is compared value by value (Python,
   only for those lines), the values named where the records are read left out
   (:data:`ringtool.event.line_records.LOCAL_KINDS`): a line whose values differ is
   rejected, and nothing is recorded of it.

So what is recorded of a host is, line for line, what it sent, and every line that is
not recorded is counted under one of the reasons below: none is dropped unsaid, and
no line, however made, raises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ringtool.errors import BadMessageError
from ringtool.event.fields import fields_of
from ringtool.event.json_lines import batch_text
from ringtool.event.layout import TraceLayout
from ringtool.event.line_columns import Check, line_checks, line_fits, line_schema, parse_lines
from ringtool.event.line_records import LOCAL_KINDS, to_records
from ringtool.event.records import NetRecords, Records
from ringtool.export.reading import DecoderCache, json_object
from ringtool.trace.report.json_keys import LINES

#: Why a line is not recorded (a fixed set of phrases: the accounting's keys).
NOT_JSON = "not a JSON object"
NOT_OF_TYPE = "not a trace event of its message's type"
BAD_FIELD = "a key or a value of another type than its event type's"
BAD_VALUE = "a value its record cannot hold"
NOT_EXACT = "not what its record gives back"
REASONS = (NOT_JSON, NOT_OF_TYPE, BAD_FIELD, BAD_VALUE, NOT_EXACT)


@dataclass
class Converted:
    """The records of a message's lines, and the lines not recorded: ``rejected`` by
    reason, ``non_event`` (``--json`` lines that are not events) by kind."""

    records: Records
    rejected: dict[str, int] = field(default_factory=dict)
    non_event: dict[str, int] = field(default_factory=dict)

    def count(self, into: dict[str, int], key: str, n: int = 1) -> None:
        if n:
            into[key] = into.get(key, 0) + n


class LineRecords:
    """See the module doc: one per collector (its decoders and schemas are cached)."""

    def __init__(
        self, layout: TraceLayout, syscall_name: Callable[[int], str] | None = None
    ) -> None:
        self.layout = layout
        self.decoders = DecoderCache(layout, syscall_name)
        self.types = frozenset(layout.type_names.values())
        self._schemas: dict[str, tuple[pa.Schema, dict[str, Check]]] = {}

    def _schema(self, type_name: str) -> pa.Schema:
        return self._typed(type_name)[0]

    def _typed(self, type_name: str) -> tuple[pa.Schema, dict[str, Check]]:
        """The Arrow schema of the type's lines and its per-key checks (cached)."""
        got = self._schemas.get(type_name)
        if got is None:
            schema = line_schema(self.layout, type_name)
            got = self._schemas[type_name] = (schema, line_checks(schema))
        return got

    def convert(self, type_name: str, lines: list[str], offset_ns: int) -> Converted:
        """The records of ``lines`` (a ``jsonl/1`` message of type ``type_name`` whose
        clock header is ``offset_ns``), see the module doc."""
        if lines and type_name in self.types:
            table = _table("\n".join(lines) + "\n", self._schema(type_name))
            if table is not None and table.num_rows == len(lines):
                types = table.column("type")
                if types.null_count == 0 and types.unique().to_pylist() == [type_name]:
                    got = self._build(type_name, table, lines, offset_ns)
                    if got is not None:
                        return got
        # a line that was not one JSON object of the type (the rows did not match the
        # lines one for one): line by line
        out = Converted(self._empty())
        table, kept = self._parse(type_name, lines, out)
        if table is None:
            return out
        got = self._build(type_name, table, kept, offset_ns, out)
        if got is None:  # each line was one object and one row alone: not seen
            out.count(out.rejected, BAD_FIELD, len(kept))
            return out
        return got

    def _build(
        self,
        type_name: str,
        table: pa.Table,
        lines: list[str],
        offset_ns: int,
        out: Converted | None = None,
    ) -> Converted | None:
        """``out`` with the records of ``table`` (the rows of ``lines``, one each) that
        give their line back (see the module doc, 2. and 3.); None when a row is not
        its line's (a line that is no JSON object differs from its row's)."""
        out = out or Converted(self._empty())
        built = to_records(self.layout, type_name, table, offset_ns)
        rec, kept = built.rec, lines
        bad = built.bad
        if bad.any():
            rec = rec[~bad]
            kept = [line for line, b in zip(lines, bad.tolist(), strict=True) if not b]
        records = self._records(type_name, rec)
        same = self._same(type_name, records, kept, offset_ns)
        if same is False:
            return None
        out.count(out.rejected, BAD_VALUE, int(bad.sum()))
        if same is not True:
            out.count(out.rejected, NOT_EXACT, int((~same).sum()))
            records = self._records(type_name, rec[same])
        out.records = records
        return out

    def _parse(
        self, type_name: str, lines: list[str], out: Converted
    ) -> tuple[pa.Table | None, list[str]]:
        """The table of the lines that are each one JSON object of the type, and those
        lines; the others counted in ``out`` (see the module doc, 1.)."""
        kept = []
        schema, checks = self._typed(type_name) if type_name in self.types else (None, {})
        for line in lines:
            try:
                obj = json_object(line)
            except BadMessageError:
                out.count(out.rejected, NOT_JSON)
                continue
            kind = obj.get("type")
            if isinstance(kind, str) and kind in LINES:
                out.count(out.non_event, kind)
            elif kind != type_name or schema is None:
                out.count(out.rejected, NOT_OF_TYPE)
            elif not line_fits(obj, checks):
                out.count(out.rejected, BAD_FIELD)
            else:
                kept.append(line)
        if not kept or schema is None:
            return None, []
        good = _readable(kept, schema)
        if not all(good):  # pyarrow refused what the check let through
            out.count(out.rejected, BAD_FIELD, good.count(False))
            kept = [line for line, ok in zip(kept, good, strict=True) if ok]
        table = _table("\n".join(kept) + "\n", schema) if kept else None
        if kept and _rows(table) != len(kept):  # each part was read: not seen
            out.count(out.rejected, BAD_FIELD, len(kept))
            return None, []
        return table, kept

    def _same(
        self, type_name: str, records: Records, lines: list[str], offset_ns: int
    ) -> np.ndarray[Any, Any] | bool:
        """True when the records give back ``lines`` exactly; else per line whether
        its values are its record's (see the module doc, 3.); False when a line that
        differs is not one JSON object (the rows were not the lines one for one)."""
        text = batch_text(self.decoders.get(offset_ns), records, None)
        if text == "\n".join(lines) + "\n":
            return True
        local = {f.key for f in fields_of(type_name) if f.kind in LOCAL_KINDS}
        back = text.split("\n")[:-1]
        same = np.ones(len(lines), bool)
        for i, (mine, theirs) in enumerate(zip(back, lines, strict=True)):
            if mine != theirs:
                try:
                    a, b = json_object(mine), json_object(theirs)
                except BadMessageError:
                    return False
                same[i] = all(a.get(k) == b.get(k) for k in a.keys() | b.keys() if k not in local)
        return same

    def _records(self, type_name: str, rec: np.ndarray[Any, Any]) -> Records:
        if type_name == "net":
            width = rec.dtype.itemsize
            starts = np.arange(len(rec), dtype=np.int64) * width
            size = np.full(len(rec), width, np.int64)
            return Records(np.empty(0, self.layout.event),
                           NetRecords(rec, rec.tobytes(), starts, size))  # fmt: skip
        return Records(rec.view(self.layout.event))

    def _empty(self) -> Records:
        return Records(np.empty(0, self.layout.event))


def _readable(lines: list[str], schema: pa.Schema) -> list[bool]:
    """Per line whether pyarrow reads it as one row: the lines as one batch, halved
    where it fails (a few bad lines cost a few calls, not one per line)."""
    if _rows(_table("\n".join(lines) + "\n", schema)) == len(lines):
        return [True] * len(lines)
    if len(lines) == 1:
        return [False]
    half = len(lines) // 2
    return _readable(lines[:half], schema) + _readable(lines[half:], schema)


def _rows(table: pa.Table | None) -> int:
    return -1 if table is None else table.num_rows


def _table(text: str, schema: pa.Schema) -> pa.Table | None:
    try:
        return parse_lines(text.encode(), schema)
    except (pa.ArrowException, ValueError):
        return None


__all__ = ["BAD_FIELD", "BAD_VALUE", "NOT_EXACT", "NOT_JSON", "NOT_OF_TYPE", "REASONS",
           "Converted", "LineRecords"]  # fmt: skip
