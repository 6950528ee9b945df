"""``--json`` output: JSON lines, one object per event, then stats and a summary.

Line kinds (``type``): ``start`` (sources running, notes), one per event (see
:mod:`ringtool.event.decode`, encoded by :mod:`ringtool.event.json_lines`), ``stats``
once per interval, and a final ``summary`` whose ``events`` equals the number of event
lines written. A batch of records is written with one ``write`` and flushed, so a
reader (or ``head``) sees lines promptly. ``--fields`` keeps only the named keys, in
that order, in event lines (net ones too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from ringtool.event.decode import Decoder, Event
from ringtool.event.json_lines import batch_text, object_line
from ringtool.trace.sink import OutputBase
from ringtool.trace.stats import TraceStats


class JsonOutput(OutputBase):
    """Writes JSON lines to ``stream`` (see the module doc)."""

    def __init__(
        self, stream: TextIO, decoder: Decoder, fields: Sequence[str] | None = None
    ) -> None:
        self.stream = stream
        self.decoder = decoder
        #: ``--fields``: the keys of an event line, in this order (None: all)
        self.fields = list(fields) if fields else None

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._write([{"type": "start", "sources": sources, "notes": notes}])

    def batch(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None:
        text = batch_text(self.decoder, arr, net, self.fields)
        if text:
            self.stream.write(text)
            self.stream.flush()

    def stats(self, stats: TraceStats) -> None:
        self._write([stats.stats_record()])

    def summary(self, stats: TraceStats) -> None:
        self._write([stats.summary_record()])

    def note(self, text: str) -> None:
        self._write([{"type": "note", "text": text}])

    def _write(self, objs: list[dict[str, Any]]) -> None:
        self.stream.write("".join(object_line(o) + "\n" for o in objs))
        self.stream.flush()


__all__ = ["JsonOutput"]
