"""The field values of one type's records for the column outputs, a column at a time,
with constant columns converted once.

:func:`group_values` gives every field (:mod:`ringtool.event.fields`) but the time as
a list of Python values (what :meth:`ringtool.event.decode.Decoder.values` gives), and
the string fields also as printable text (:func:`ringtool.event.safe_text.printable`).
A column whose raw values are all equal, of a kind whose value depends on that column
alone, is converted once and repeated (``[v] * n``: one list, no per-record object),
and a string column that is printable ASCII (:class:`ringtool.event.columns.Texts`)
is its own printable text: under a steady load most columns of a batch (pid, cpu, uid,
flags, the comm, often the path) hold one value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ringtool.event.columns import Array, column, cstrings
from ringtool.event.decode import Decoder
from ringtool.event.fields import Field
from ringtool.event.safe_text import printable

#: Kinds whose value is a function of the field's own column (see fields.py).
COLUMN_ONLY = frozenset(("int", "syscall", "latency_us", "truncated", "low32", "high32", "call",
                         "ip", "flag", "tcp_states", "tcp_failed", "blk_dev", "blk_disk",
                         "blk_op", "blk_sync"))  # fmt: skip


def group_values(
    decoder: Decoder, rec: Array, fields: Iterable[Field]
) -> tuple[dict[str, list[Any]], dict[str, list[str]]]:
    """``(values, shown)``: per key of ``fields`` (but ``time`` ones) the records'
    values; per string key, the values as printable text (see the module doc)."""
    n = len(rec)
    values: dict[str, list[Any]] = {}
    shown: dict[str, list[str]] = {}
    for f in fields:
        if f.kind == "time":
            continue
        col = column(rec, f.column)
        if f.kind == "str":
            texts = cstrings(col)
            values[f.key] = texts.values
            shown[f.key] = texts.values if texts.printable else list(map(printable, texts.values))
        elif f.kind == "packet_comm":
            values[f.key] = decoder.values(rec, f)
            shown[f.key] = list(map(printable, values[f.key]))
        elif n and f.kind in COLUMN_ONLY and (col == col[0]).all():
            values[f.key] = decoder.values(rec[:1], f) * n
        else:
            values[f.key] = decoder.values(rec, f)
    return values, shown


__all__ = ["COLUMN_ONLY", "group_values"]
