"""Tables of chosen fields: ``--csv``, and ``--no-tui --fields a,b,c`` columns.

Both write one row per event with the fields named by ``--fields`` (default for CSV:
every field of the types the running sources emit, and of markers, in the order of
:data:`ringtool.event.fields.FIELD_NAMES`: :func:`~ringtool.event.fields.names_of`),
in that order; a field the event's type does not have is empty (CSV) or ``-``
(columns). Values come from the
field spec a column at a time (:func:`field_rows`), the same values as
:meth:`ringtool.event.decode.Decoder.decode`.

CSV (RFC 4180): a header line with the field names, then the rows; a cell that holds
a comma, a quote, CR or LF is quoted with its quotes doubled; lines end in CRLF.
Strings are the exact text of the event (a file name with a newline or a quote is
one cell that a CSV reader gives back unchanged: data, never structure); ``None``
(an unknown exit code) is an empty cell; ``ts`` is written as ``repr`` of the float;
a list (an exec's ``argv``) is its JSON array text and a boolean ``true``/``false``,
as in ``--json`` (:func:`cell`).
Notes, the summary and the columns' ``--`` stats lines (every interval's with
``--stats``, else only an interval's with drops or losses) go to stderr (printable), so
stdout is only CSV.
Exact, that is, into a file or a pipe. When stdout is a terminal, the CSV is for eyes,
and the terminal would act on an ESC, BEL or CR inside a cell (a comm or file name
chosen by whoever runs the traced process): there every string cell goes through
:func:`ringtool.event.safe_text.printable` (``\x1b``, ``\x0d`` written out) — still
valid CSV, no longer byte-exact (``terminal``).

The columns form writes a header of the upper-cased names (the fields' column
headers: ``ts`` is ``TS``), pads every column but the
last to its :data:`WIDTHS` (a longer value pushes the rest of its line; on a terminal
flags are cut to it instead), writes values
as the default columns do (:func:`ringtool.event.value_text.field_text`: ``flags`` by
name, ``mode`` in octal, an error ``ret`` with its name; ``ts`` as the time of day with
milliseconds, with ``dates`` also the date), makes every value printable
(:func:`ringtool.event.safe_text.printable`) and cuts each line to ``width`` (None:
never).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from ringtool.event.columns import by_type
from ringtool.event.decode import Decoder
from ringtool.event.detail_fit import cut_flags
from ringtool.event.fields import FIELD_NAMES, fields_of, names_of
from ringtool.event.records import Records
from ringtool.event.registry import EVENT_TYPES
from ringtool.event.safe_text import printable
from ringtool.event.value_text import clock_texts, clock_width, field_text
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.sink import OutputBase
from ringtool.trace.writers.output_columns import (
    ColumnOutput,
    cut,
    format_stats,
    format_summary,
)

#: Column widths of the ``--fields`` columns (others: 8, or the header's length; ``ts``:
#: :func:`ringtool.event.value_text.clock_width`): ``flags`` fits ``O_RDONLY|O_CLOEXEC``
#: (on a terminal longer flags are cut by whole names, ``O_WRONLY|O_CREAT|…``, so the
#: columns after them stay in line), ``ret`` ``-20 ENOTDIR``.
WIDTHS = {"cpu": 3, "pid": 7, "tid": 7, "comm": 16, "type": 7, "child_comm": 16,
          "flags": 18, "mode": 4, "ret": 11}  # fmt: skip
_MISSING = object()


def cell(v: Any) -> Any:
    """A value as a table cell: a list as its JSON text, a boolean as ``true``/``false``
    (as ``--json`` writes them); anything else as it is."""
    if isinstance(v, list):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def field_rows(decoder: Decoder, records: Records, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """One tuple of the ``keys`` values per event (events in array order, then the
    packets); a key the event does not have is :data:`_MISSING`."""
    return [row for arr in records.arrays() for row in _rows(decoder, arr, keys)]


def _rows(decoder: Decoder, arr: np.ndarray[Any, Any], keys: Sequence[str]) -> list[Any]:
    """:func:`field_rows` of one record array, in array order."""
    out: list[Any] = [None] * len(arr)
    for g in by_type(arr, decoder.types, decoder.views):
        n = len(g.rec)
        spec = {f.key: f for f in fields_of(g.name)}
        cols = [
            [g.name] * n if key == "type"
            else decoder.values(g.rec, spec[key]) if key in spec
            else [_MISSING] * n
            for key in keys
        ]  # fmt: skip
        rows = list(zip(*cols, strict=True))
        if g.positions is None:
            out = rows
            break
        for i, row in zip(g.positions.tolist(), rows, strict=True):
            out[i] = row
    return out


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _shown(v: Any) -> Any:
    """A cell for a terminal: as :func:`cell`, a string made printable."""
    if v is _MISSING:
        return None
    v = cell(v)
    return printable(v) if isinstance(v, str) else v


class CsvOutput(OutputBase):
    """Writes ``--csv`` to ``stream`` (see the module doc); notes and the summary to
    ``err``. ``terminal``: escape control characters in cells (None: when ``stream``
    is a terminal)."""

    def __init__(
        self,
        stream: TextIO,
        decoder: Decoder,
        fields: Sequence[str] | None = None,
        err: TextIO | None = None,
        terminal: bool | None = None,
        stats_lines: bool = False,
    ) -> None:
        self.stream = stream
        #: ``--stats``: a stats line every interval (else: those with drops or losses)
        self.stats_lines = stats_lines
        self.terminal = _is_terminal(stream) if terminal is None else terminal
        self.decoder = decoder
        self.keys = list(fields or FIELD_NAMES)
        #: no --fields: the columns of the running sources' types (at :meth:`start`)
        self._by_sources = not fields
        self.err = err or sys.stderr
        self._csv = csv.writer(stream, lineterminator="\r\n")

    def start(self, sources: list[str], notes: list[str]) -> None:
        for note in notes:
            self.note(note)
        if self._by_sources:  # markers come to any trace
            self.keys = list(
                names_of(t.name for t in EVENT_TYPES if t.source in {*sources, "mark"})
            )
        self._csv.writerow(self.keys)
        self.stream.flush()

    def batch(self, records: Records) -> None:
        rows = field_rows(self.decoder, records, self.keys)
        if not rows:
            return
        if self.terminal:  # for eyes only: a terminal must not act on what is in a cell
            self._csv.writerows(tuple(_shown(v) for v in row) for row in rows)
        else:
            self._csv.writerows(
                tuple(None if v is _MISSING else cell(v) for v in row) for row in rows
            )
        self.stream.flush()

    def stats(self, stats: TraceStats) -> None:
        """The columns' ``--`` stats line on ``err`` (stdout is only CSV)."""
        if self.stats_lines or stats.interval_dropped:
            self.err.write(format_stats(stats, None) + "\n")
            self.err.flush()

    def summary(self, stats: TraceStats) -> None:
        self.err.write("".join(f"{line}\n" for line in format_summary(stats, None)))
        self.err.flush()

    def note(self, text: str) -> None:
        self.err.write(f"note: {printable(text)}\n")
        self.err.flush()


class FieldColumnOutput(ColumnOutput):
    """``--no-tui --fields``: the chosen fields as columns (see the module doc); stats,
    summary and notes as :class:`ColumnOutput` writes them."""

    def __init__(
        self,
        stream: TextIO,
        decoder: Decoder,
        fields: Sequence[str],
        width: int | None = 80,
        err: TextIO | None = None,
        stats_lines: bool = False,
        dates: bool = False,
    ) -> None:
        super().__init__(stream, decoder, width, err, stats_lines, dates)
        self.keys = list(fields)
        widths = {**WIDTHS, "ts": clock_width(dates)}
        self._pads = [max(widths.get(k, 8), len(k)) for k in self.keys[:-1]] + [0]

    def _line(self, cells: Sequence[str]) -> str:
        text = " ".join(c.ljust(pad) for c, pad in zip(cells, self._pads, strict=True))
        return cut(text.rstrip(), self.width)

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._tell(self.start_lines(sources, notes))
        self._write([self._line([k.upper() for k in self.keys])])  # Field.header

    def batch(self, records: Records) -> None:
        rows = field_rows(self.decoder, records, self.keys)
        if not rows:
            return
        cols: list[list[str]] = []
        for j, key in enumerate(self.keys):
            col = [row[j] for row in rows]
            if key == "ts":
                seconds = np.array([-1.0 if v is _MISSING else v for v in col])
                cols.append(clock_texts(seconds, self.dates))
            else:
                texts = ["-" if v is _MISSING or v is None else printable(field_text(key, cell(v)))
                         for v in col]  # fmt: skip
                if key == "flags" and self.width is not None and self._pads[j]:
                    texts = [cut_flags(t, self._pads[j]) for t in texts]  # the columns stay
                cols.append(texts)
        self._write([self._line(cells) for cells in zip(*cols, strict=True)])


__all__ = ["WIDTHS", "CsvOutput", "FieldColumnOutput", "field_rows"]
