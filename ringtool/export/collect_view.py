"""The three outputs of ``ringtool collect``.

* :class:`TableView`: the fleet view, one row per host (events/s, events, kernel drops,
  lost, export drops, gaps, read elsewhere by another ``collect`` on the durable
  consumer, lag), and under it each host's busiest TCP connections and its disks
  (:mod:`ringtool.export.busiest_view`), redrawn once per interval: rich live tables
  on a terminal, plain text blocks otherwise.
* :class:`JsonView` (``--json``): per interval one ``{"type": "host", ...}`` line per
  host and one ``{"type": "fleet", ...}``; at the end a ``{"type": "summary", ...}``.
* :class:`MergedView` (``--merged``): the events of every host as JSON lines (each with
  ``"host"`` first: the lines as :class:`~ringtool.export.intake.Intake` checked and
  wrote them back) in timestamp order, merged with :mod:`ringtool.merge` (one buffer per
  host, a reorder window of ``window_ms`` of event time); the fleet summary goes to
  stderr at the end.

Host names and event text are data: the table shows them as rich ``Text``, never markup,
made :func:`~ringtool.event.safe_text.printable` (no terminal escapes). A line under
the table says how many messages were refused, by reason.
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from typing import Any, TextIO

from ringtool.event.safe_text import printable
from ringtool.export.busiest_view import CONN_COLUMNS, DISK_COLUMNS, TABLE_TOP, conn_rows, disk_rows
from ringtool.export.fleet import Fleet
from ringtool.export.reading import Received

COLUMNS = ("HOST", "EV/S", "EVENTS", "DROPPED", "LOST", "EXP_DROP", "GAPS", "ELSEWHERE",
           "LAG_S")  # fmt: skip


def fleet_record(fleet: Fleet) -> dict[str, Any]:
    return {"type": "fleet", "hosts": len(fleet.hosts), "messages": fleet.messages,
            "pending_messages": fleet.pending, "bad_messages": fleet.bad,
            "bad_reasons": dict(sorted(fleet.bad_reasons.items()))}  # fmt: skip


def bad_line(fleet: Fleet) -> str:
    """``refused N messages: reason n, ...`` (empty when none were)."""
    if not fleet.bad:
        return ""
    why = ", ".join(f"{k} {v:,}" for k, v in sorted(fleet.bad_reasons.items()))
    return f"refused {fleet.bad:,} messages: {why}"


def summary_record(fleet: Fleet) -> dict[str, Any]:
    return {**fleet_record(fleet), "type": "summary",
            "per_host": {r["host"]: r for r in fleet.records()}}  # fmt: skip


def _row(r: dict[str, Any]) -> list[str]:
    keys = ("events", "dropped", "lost", "export_dropped", "gaps", "read_elsewhere")
    nums = [f"{r[k]:,}" for k in keys]
    return [printable(r["host"]), f"{r['events_per_s']:,.0f}", *nums, f"{r['lag_s']:.1f}"]


_LEFT = ("HOST", "COMM", "LOCAL", "REMOTE", "DISK", "DEV")


def _sections(fleet: Fleet) -> list[tuple[str, tuple[str, ...], list[list[str]]]]:
    """The busiest connections and disks, where any host has some."""
    out: list[tuple[str, tuple[str, ...], list[list[str]]]] = []
    conns, disks = conn_rows(fleet), disk_rows(fleet)
    if conns:
        out.append((f"busiest TCP connections (top {TABLE_TOP} per host, bytes over their "
                    "life, at close)", CONN_COLUMNS, conns))  # fmt: skip
    if disks:
        out.append(("disks (last interval; p99 of the service time)", DISK_COLUMNS, disks))
    return out


class TableView:
    """The fleet table (see module doc)."""

    def __init__(self, stream: TextIO, title: str) -> None:
        self.stream = stream
        self.title = title
        self.live: Any = None
        self.tty = stream.isatty()

    def message(self, rec: Received) -> None:
        pass

    def _table(self, fleet: Fleet) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        t = Table(title=Text(printable(f"{self.title}  backlog {fleet.pending:,} messages")),
                  caption=Text(bad_line(fleet)) if fleet.bad else None)  # fmt: skip
        for c in COLUMNS:
            t.add_column(c, justify="left" if c == "HOST" else "right")
        for r in fleet.records():
            t.add_row(*(Text(cell) for cell in _row(r)))
        parts = [t]
        for title, cols, rows in _sections(fleet):
            s = Table(title=title)
            for c in cols:
                s.add_column(c, justify="right" if c not in _LEFT else "left")
            for row in rows:
                s.add_row(*(Text(cell) for cell in row))
            parts.append(s)
        return Group(*parts)

    def tick(self, fleet: Fleet) -> None:
        if self.tty:
            if self.live is None:  # started at the first refresh: after connecting
                from rich.console import Console
                from rich.live import Live

                self.live = Live(console=Console(file=self.stream), auto_refresh=False)
                self.live.start()
            self.live.update(self._table(fleet), refresh=True)
            return
        lines = [f"-- {time.strftime('%H:%M:%S')} {self.title}: backlog {fleet.pending} "
                 "messages", " ".join(f"{c:>10}" for c in COLUMNS)]  # fmt: skip
        lines += [" ".join(f"{cell:>10}" for cell in _row(r)) for r in fleet.records()]
        lines += [bad_line(fleet)] if fleet.bad else []
        for title, cols, rows in _sections(fleet):
            lines += [f"-- {title}", " ".join(f"{c:>12}" for c in cols)]
            lines += [" ".join(f"{cell:>12}" for cell in row) for row in rows]
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()

    def close(self, fleet: Fleet) -> None:
        self.tick(fleet)
        if self.live is not None:
            self.live.stop()


class JsonView:
    """``--json`` (see module doc)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def message(self, rec: Received) -> None:
        pass

    def tick(self, fleet: Fleet) -> None:
        objs = [{"type": "host", **r} for r in fleet.records()] + [fleet_record(fleet)]
        self.stream.write("".join(json.dumps(o) + "\n" for o in objs))
        self.stream.flush()

    def close(self, fleet: Fleet) -> None:
        self.stream.write(json.dumps(summary_record(fleet)) + "\n")
        self.stream.flush()


class MergedView:
    """``--merged`` (see module doc)."""

    def __init__(self, stream: TextIO, window_ms: float, err: TextIO | None = None) -> None:
        self.stream = stream
        self.err = err or sys.stderr
        self.window_us = window_ms * 1000
        self.buffers: dict[str, deque[tuple[int, str]]] = {}
        self.carry: deque[tuple[int, str]] = deque()
        self.late = 0  # out of order, mergers replaced so far
        self.merger: Any = None
        self.written = 0

    def message(self, rec: Received) -> None:
        if not rec.lines:
            return
        buf = self.buffers.get(rec.host)
        if buf is None:
            self._rebuild(rec.host)
            buf = self.buffers[rec.host]
        buf.extend(zip(rec.ts_ns, rec.lines, strict=True))
        self._write(self.merger.take(1 << 20))

    def _rebuild(self, host: str) -> None:
        """A new host is a new buffer. The window's held events go to a *carry* buffer
        (buffer 0, kept in timestamp order) so nothing is delivered early; then the
        merge runs over the carry and every host's buffer (what they hold stays)."""
        from heapq import merge

        from ringtool.merge import DequeSource, merge_sources

        if self.merger is not None:
            self.late += self.merger.stats.out_of_order
            held = list(self.merger.flush())
            self.carry = deque(merge(self.carry, held, key=lambda ev: ev[0]))
        self.buffers[host] = deque()
        sources = [DequeSource(self.carry), *(DequeSource(dq) for dq in self.buffers.values())]
        self.merger = merge_sources(sources, window_us=self.window_us)

    def _write(self, items: list[tuple[int, str]]) -> None:
        if items:
            self.stream.write("".join(line + "\n" for _, line in items))
            self.stream.flush()
            self.written += len(items)

    def tick(self, fleet: Fleet) -> None:
        if self.merger is not None:
            self.merger.advance(time.time_ns())
            self._write(self.merger.take(1 << 20))

    def close(self, fleet: Fleet) -> None:
        if self.merger is not None:
            self._write(self.merger.take(1 << 30))
            self._write(list(self.merger.flush()))
            late = self.late + self.merger.stats.out_of_order
        else:
            late = 0
        rec = {**summary_record(fleet), "events_written": self.written, "out_of_order": late}
        print(json.dumps(rec), file=self.err, flush=True)


class Tee:
    """Several views driven as one, in their order (``collect --record``: the
    recorder, then the display)."""

    def __init__(self, *views: Any) -> None:
        self.views = views

    def message(self, rec: Received) -> None:
        for view in self.views:
            view.message(rec)

    def tick(self, fleet: Fleet) -> None:
        for view in self.views:
            view.tick(fleet)

    def close(self, fleet: Fleet) -> None:
        try:
            self.views[0].close(fleet)
        finally:
            if len(self.views) > 1:
                Tee(*self.views[1:]).close(fleet)


__all__ = [
    "JsonView",
    "MergedView",
    "TableView",
    "Tee",
    "bad_line",
    "fleet_record",
    "summary_record",
]
