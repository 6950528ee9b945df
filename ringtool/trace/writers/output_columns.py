"""``--no-tui`` output: bcc-style columns, cut to ``width`` columns on a terminal.

stdout (``stream``) carries the header and one line per event, nothing else, so
``ringtool trace --no-tui > events.txt`` or ``| head`` gets events only::

    TS           CPU PID     UID    COMM             TYPE    DETAIL
    12:00:01.250   1 4242    1000   cat              exec    /usr/bin/cat ppid=4241
    12:00:01.251   1 4242    1000   cat              open    /etc/passwd O_RDONLY = 3 (openat)
    12:00:01.251   1 4242    1000   cat              open    /etc/no O_RDONLY = -2 ENOENT (openat)

The headers are the fields' names in upper case (``ts``: ``TS``, the local time with
milliseconds, with ``dates`` (``-T``) also the date: ``2026-12-06 12:00:01.250``;
``type``: ``TYPE``), as ``--fields`` columns name them. ``UID`` is the task's real uid
(``-`` for net events: no task); values read as :mod:`ringtool.event.value_text`
writes them (an error result with its name).

stderr (``err``) gets the rest: notes, ``sources: ...``, ``Tracing... Ctrl-C to end.``,
the ``--`` stats line of each interval with ``stats_lines`` (``--stats``; else only of
an interval with drops or losses) and the summary.

With a ``width`` (the CLI gives the terminal's width when stdout is one), every line is
cut to ``width`` characters by :func:`ringtool.event.detail_fit.fit_parts`: an open
drops its syscall's name, then its flags, before a long path loses its start (``…``
marks the cut: ``…/LC_MESSAGES/x.mo``, never a relative-looking ``../``); other
details keep their end, or their start (a net line keeps direction and protocol).
``width=None`` (stdout is a pipe or a file, or ``-w``) never cuts. Packets
(no process: TC) show :data:`~ringtool.event.fields.NET_LABEL` as their COMM, as in
every output.
Strings from traced processes (comm, paths) and notes go through
:func:`ringtool.event.safe_text.printable`: a control character or escape sequence
in a file name is printed escaped (``\x1b[2J``), never sent to the terminal.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import numpy as np

from ringtool.event.columns import TypeGroup, by_type, in_array_order, wall_seconds
from ringtool.event.decode import Decoder, Event
from ringtool.event.detail import DETAIL, detail_split
from ringtool.event.detail_fit import ELLIPSIS, Plan, apply, cut, fit, fit_parts, plan
from ringtool.event.fields import COMMON, TYPE, fields_of
from ringtool.event.group_values import group_values
from ringtool.event.line_pieces import Piece, lines_of, text_of
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.event.value_text import clock_parts, clock_text, clock_width
from ringtool.trace.report.proc_names import shown_comm
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.summary import format_summary
from ringtool.trace.sink import OutputBase

_H = {f.key: f.header for f in (TYPE, *COMMON)}


def header(dates: bool = False) -> str:
    """The header line: the fields' column headers
    (:attr:`~ringtool.event.fields.Field.header`), then the detail (``dates``: the
    ``TS`` column with the date)."""
    ts = _H["ts"].ljust(clock_width(dates))
    return (
        f"{ts} {_H['cpu']:>3} {_H['pid']:<7} {_H['uid']:<6} {_H['comm']:<16} {_H['type']:<7} DETAIL"
    )


HEADER = header()


def fit_detail(ev: Event, width: int | None) -> str:
    """The event's detail, printable, in at most ``width`` characters
    (:func:`ringtool.event.detail_fit.fit_parts`; see the module doc)."""
    path, rest = (printable(part) for part in detail_split(ev))
    return fit_parts(path, rest, width, flags_first=ev["type"] == "open")


def format_event(ev: Event, width: int | None = 80, dates: bool = False) -> str:
    """One column line for ``ev``, at most ``width`` characters (None: no limit)."""
    clock = clock_text(ev["ts"], dates)
    comm = printable(shown_comm(ev["comm"], ev["type"]))  # a packet's: NET_LABEL
    comm = comm if width is None else comm[:16]
    uid = ev.get("uid", "-")  # net events have none
    head = f"{clock} {ev['cpu']:>3} {ev['pid']:<7} {uid:<6} {comm:<16} {ev['type']:<7} "
    return head + fit_detail(ev, None if width is None else max(0, width - len(head)))


def format_stats(stats: TraceStats, width: int | None = 80) -> str:
    per = " ".join(f"{k} {v:.0f}" for k, v in stats.rate_source.items())
    line = (
        f"-- {stats.uptime:6.1f}s {stats.rate_total:8.0f} ev/s ({per}) "
        f"drops {stats.dropped} lost {stats.lost}"
    )
    if (ow := stats.overwritten) is not None:  # a flight recorder: as of its last dump
        line += f" {ow.key} {ow.total}"
    if stats.export is not None:  # --export: the export drops first, before the cut
        line = line.replace(" ev/s (", f" ev/s xdrop {stats.export['export_dropped']} (", 1)
    return cut(line, width)


def _printable_all(texts: list[str]) -> list[str]:
    """:func:`printable` of each text; one C-level check when all already are."""
    return texts if "".join(texts).isprintable() else list(map(printable, texts))


def _same(values: list[Any]) -> bool:
    return values.count(values[0]) == len(values)


def _texts(values: list[Any], fmt: str) -> Piece:
    """``fmt % v`` of each value; one text when all values are equal."""
    return fmt % (values[0],) if _same(values) else [fmt % (v,) for v in values]


def _plain(texts: list[str]) -> Piece:
    """The texts as a piece: one text when all are equal, else the list itself."""
    return texts[0] if _same(texts) else texts


def _group_pieces(
    decoder: Decoder, g: TypeGroup, width: int | None, dates: bool = False
) -> tuple[list[Piece], Piece, Piece]:
    """The pieces of the column lines of one type's records (a column with one value
    in the group is formatted once, :mod:`ringtool.event.line_pieces`), and the path
    and rest of the detail (the last two pieces)."""
    cols, shown = group_values(decoder, g.rec, fields_of(g.name))
    second, millis = clock_parts(wall_seconds(g.rec["h"]["ts"], decoder.offset_ns), dates)
    comm = shown["comm"]  # a packet's: NET_LABEL (its field's kind)
    path_key, rest_of, rest_keys = DETAIL.get(g.name, (None, None, ()))
    path: Piece = _texts(shown[path_key], "%s") if path_key else ""
    rest: Piece = ""
    if rest_of is not None:
        if all(_same(cols[k]) for k in rest_keys if k in cols):
            rest = printable(rest_of({k: v[:1] for k, v in cols.items()})[0])
        else:
            rest = _printable_all(rest_of(cols))
    pieces: list[Piece] = [
        _plain(second), _plain(millis), " ", _texts(cols["cpu"], "%3d "),
        _texts(cols["pid"], "%-7d "),
        _texts(cols["uid"], "%-6d ") if "uid" in cols else f"{'-':<6} ",  # net: no task
        _texts(comm if width is None else [c[:16] for c in comm], "%-16s "),
        f"{g.name:<7} ", path, rest,
    ]  # fmt: skip
    return pieces, path, rest


def group_lines(
    decoder: Decoder, g: TypeGroup, width: int | None, dates: bool = False
) -> list[str]:
    """The column lines of one type's records, formatted a column at a time; only a
    line longer than ``width`` is cut one by one (as :func:`format_event` does)."""
    pieces, path, rest = _group_pieces(decoder, g, width, dates)
    n = len(g.rec)
    lines = lines_of(pieces, n)
    if width is not None:
        plans: dict[tuple[int, str, int], Plan] = {}  # a cut planned once per shape
        is_open = g.name == "open"
        for i in np.flatnonzero(np.fromiter(map(len, lines), np.int64, n) > width).tolist():
            line = lines[i]
            p = path if isinstance(path, str) else path[i]
            r = rest if isinstance(rest, str) else rest[i]
            head = len(line) - len(p) - len(r)
            key = (len(p), r, width - head)
            if (how := plans.get(key)) is None:
                how = plans[key] = plan(*key, is_open)
            lines[i] = line[:head] + apply(how, p, r)
    return lines


def column_lines(
    decoder: Decoder, arr: np.ndarray[Any, Any], width: int | None, dates: bool = False
) -> list[str]:
    """One column line per record of ``arr`` (events or packets), in array order:
    :func:`format_event` of each decoded event, computed a column at a time."""
    return in_array_order(
        arr, decoder.types, lambda g: group_lines(decoder, g, width, dates), decoder.views
    )


class ColumnOutput(OutputBase):
    """Writes the header and event lines to ``stream``, everything else to ``err``
    (default stderr; see the module doc); ``dates``: times with their date."""

    def __init__(
        self,
        stream: TextIO,
        decoder: Decoder,
        width: int | None = 80,
        err: TextIO | None = None,
        stats_lines: bool = False,
        dates: bool = False,
    ) -> None:
        self.stream = stream
        self.decoder = decoder
        self.width = width
        self.err = err or sys.stderr
        #: ``--stats``: a stats line every interval (else: those with drops or losses)
        self.stats_lines = stats_lines
        self.dates = dates

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._tell(self.start_lines(sources, notes))
        self._write([cut(header(self.dates), self.width)])

    def start_lines(self, sources: list[str], notes: list[str]) -> list[str]:
        """What :meth:`start` tells on ``err``: the notes, the sources, the ready line."""
        lines = [cut(f"note: {printable(n)}", self.width) for n in notes]
        lines.append(cut(f"sources: {', '.join(sources)}", self.width))
        lines.append("Tracing... Ctrl-C to end.")
        return lines

    def batch(self, records: Records) -> None:
        w = self.width
        arrays = records.arrays()
        if w is None and len(arrays) == 1:
            groups = by_type(arrays[0], self.decoder.types, self.decoder.views)
            if len(groups) == 1 and groups[0].positions is None:
                pieces, _, _ = _group_pieces(self.decoder, groups[0], None, self.dates)  # uncut
                self.stream.write(text_of(pieces, len(arrays[0])))
                self.stream.flush()
                return
        lines = [line for arr in arrays for line in column_lines(self.decoder, arr, w, self.dates)]
        if lines:
            self._write(lines)

    def stats(self, stats: TraceStats) -> None:
        if self.stats_lines or stats.interval_dropped:
            self._tell([format_stats(stats, self.width)])

    def summary(self, stats: TraceStats) -> None:
        self._tell(format_summary(stats, self.width))

    def note(self, text: str) -> None:
        self._tell([cut(f"note: {printable(text)}", self.width)])

    def _write(self, lines: list[str]) -> None:
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()

    def _tell(self, lines: list[str]) -> None:
        self.err.write("\n".join(lines) + "\n")
        self.err.flush()


__all__ = [
    "ELLIPSIS",
    "HEADER",
    "ColumnOutput",
    "column_lines",
    "cut",
    "fit",
    "fit_detail",
    "fit_parts",
    "format_event",
    "format_stats",
    "format_summary",
    "header",
]
