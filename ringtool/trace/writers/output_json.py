"""``--json`` output: JSON lines, one object per event, then a summary.

Line kinds (``type``): on stdout (``stream``) one per event (see
:mod:`ringtool.event.decode`, encoded by :mod:`ringtool.event.json_lines`) and a final
``summary`` whose ``events`` equals the number of event lines written (with ``--hist``,
the ``hist`` lines after it); on stderr (``err``) ``start`` (sources running, notes: the
ready line), ``stats`` (each interval's with ``stats_lines``, ``--stats``; else only
an interval's with drops or losses) and ``note``, so stdout is the events alone. A
batch of records is written with one ``write`` and flushed, so a reader (or ``head``)
sees lines promptly. ``--fields`` keeps only the named keys, in that order, in event
lines (net ones too).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ringtool.event.decode import Decoder
from ringtool.event.json_lines import batch_text, object_line
from ringtool.event.records import Records
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import stats_record, summary_record
from ringtool.trace.sink import OutputBase


class JsonOutput(OutputBase):
    """Writes JSON lines to ``stream`` (see the module doc)."""

    def __init__(
        self,
        stream: TextIO,
        decoder: Decoder,
        fields: Sequence[str] | None = None,
        err: TextIO | None = None,
        stats_lines: bool = False,
    ) -> None:
        self.stream = stream
        #: ``--stats``: a stats line every interval (else: those with drops or losses)
        self.stats_lines = stats_lines
        self.decoder = decoder
        #: ``--fields``: the keys of an event line, in this order (None: all)
        self.fields = list(fields) if fields else None
        self.err = err or sys.stderr

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._write([{"type": "start", "sources": sources, "notes": notes}], self.err)

    def batch(self, records: Records) -> None:
        text = batch_text(self.decoder, records, self.fields)
        if text:
            self.stream.write(text)
            self.stream.flush()

    def stats(self, stats: TraceStats) -> None:
        if self.stats_lines or stats.interval_dropped:
            self._write([stats_record(stats)], self.err)

    def summary(self, stats: TraceStats) -> None:
        self._write([summary_record(stats)], self.stream)

    def note(self, text: str) -> None:
        self._write([{"type": "note", "text": text}], self.err)

    @staticmethod
    def _write(objs: list[dict[str, Any]], to: TextIO) -> None:
        to.write("".join(object_line(o) + "\n" for o in objs))
        to.flush()


__all__ = ["JsonOutput"]
