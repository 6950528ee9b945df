"""The records of a ``jsonl/1`` message, for ``collect --record`` (docs/record.md).

A host exporting in the default format sends its events as the JSON lines ``trace
--json`` prints, one type per message. :class:`LineRecords` turns them back into the
layout's records, so that both formats go through the one writer into one table:

1. the message's lines are parsed as one batch with pyarrow under the Arrow schema of
   their type (:mod:`ringtool.event.line_columns`); when that fails (a line that is
   not JSON, not of the type, with a key or value of another type, an empty line),
   each line is looked at alone: a line of another kind of ``--json`` output
   (``stats``, ``summary``, ``start``, ...: :data:`ringtool.trace.report.json_keys.LINES`)
   is counted in ``non_event`` by its kind, a line that is not an event of its
   message's type is *rejected*, and the others are parsed as one batch again;
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

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ringtool.errors import BadMessageError
from ringtool.event.fields import fields_of
from ringtool.event.json_lines import batch_text
from ringtool.event.layout import TraceLayout
from ringtool.event.line_columns import line_schema, parse_lines
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

    def __init__(self, layout: TraceLayout, syscall_name: Any = None) -> None:
        self.layout = layout
        self.decoders = DecoderCache(layout, syscall_name)
        self.types = frozenset(layout.type_names.values())
        self._schemas: dict[str, pa.Schema] = {}

    def _schema(self, type_name: str) -> pa.Schema:
        schema = self._schemas.get(type_name)
        if schema is None:
            schema = self._schemas[type_name] = line_schema(self.layout, type_name)
        return schema

    def convert(self, type_name: str, lines: list[str], offset_ns: int) -> Converted:
        """The records of ``lines`` (a ``jsonl/1`` message of type ``type_name`` whose
        clock header is ``offset_ns``), see the module doc."""
        out = Converted(self._empty(type_name))
        if not lines:
            return out
        table, kept = self._parse(type_name, lines, out)
        if table is None or not kept:
            return out
        built = to_records(self.layout, type_name, table, offset_ns)
        rec = built.rec
        if built.bad.any():
            out.count(out.rejected, BAD_VALUE, int(built.bad.sum()))
            rec = rec[~built.bad]
            kept = [line for line, bad in zip(kept, built.bad.tolist(), strict=True) if not bad]
        records = self._records(type_name, rec)
        same = self._same(type_name, records, kept, offset_ns)
        if same is not None:
            out.count(out.rejected, NOT_EXACT, int((~same).sum()))
            records = self._records(type_name, rec[same])
        out.records = records
        return out

    def _parse(
        self, type_name: str, lines: list[str], out: Converted
    ) -> tuple[pa.Table | None, list[str]]:
        """The lines' table and the lines it holds (see the module doc, 1.)."""
        if type_name in self.types:
            table = _table("\n".join(lines) + "\n", self._schema(type_name))
            if table is not None and table.num_rows == len(lines):
                types = table.column("type")
                if types.null_count == 0 and types.unique().to_pylist() == [type_name]:
                    return table, lines
        kept = []
        for line in lines:
            try:
                kind = json_object(line).get("type")
            except BadMessageError:
                out.count(out.rejected, NOT_JSON)
                continue
            if isinstance(kind, str) and kind in LINES:
                out.count(out.non_event, kind)
            elif kind != type_name or type_name not in self.types:
                out.count(out.rejected, NOT_OF_TYPE)
            elif _table(line + "\n", self._schema(type_name)) is None:
                out.count(out.rejected, BAD_FIELD)
            else:
                kept.append(line)
        if not kept:
            return None, kept
        return _table("\n".join(kept) + "\n", self._schema(type_name)), kept

    def _same(
        self, type_name: str, records: Records, lines: list[str], offset_ns: int
    ) -> np.ndarray[Any, Any] | None:
        """None when the records give back ``lines`` exactly; else per line whether
        its values are its record's (see the module doc, 3.)."""
        text = batch_text(self.decoders.get(offset_ns), records, None)
        sent = "\n".join(lines) + "\n"
        if text == sent:
            return None
        local = {f.key for f in fields_of(type_name) if f.kind in LOCAL_KINDS}
        back = text.split("\n")[:-1]
        same = np.ones(len(lines), bool)
        for i, (mine, theirs) in enumerate(zip(back, lines, strict=True)):
            if mine != theirs:
                a, b = json_object(mine), json_object(theirs)
                same[i] = all(a.get(k) == b.get(k) for k in a.keys() | b.keys() if k not in local)
        return same

    def _records(self, type_name: str, rec: np.ndarray[Any, Any]) -> Records:
        if type_name == "net":
            width = rec.dtype.itemsize
            starts = np.arange(len(rec), dtype=np.int64) * width
            size = np.full(len(rec), width, np.int64)
            return Records(np.empty(0, self.layout.event),
                           NetRecords(rec, rec.tobytes(), starts, size))  # fmt: skip
        return Records(rec.view(self.layout.event) if len(rec) else rec[:0].view(self.layout.event))

    def _empty(self, type_name: str) -> Records:
        return Records(np.empty(0, self.layout.event))


def _table(text: str, schema: pa.Schema) -> pa.Table | None:
    try:
        return parse_lines(text.encode(), schema)
    except (pa.ArrowException, ValueError):
        return None


__all__ = ["BAD_FIELD", "BAD_VALUE", "NOT_EXACT", "NOT_JSON", "NOT_OF_TYPE", "REASONS",
           "Converted", "LineRecords"]  # fmt: skip
