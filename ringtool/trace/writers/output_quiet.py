"""``trace --quiet``: no per-event output (the events go to ``--export``).

Notes go to stderr as they come; stdout gets one line at the end, the summary as
JSON (the same object ``--json`` ends with), so a script can check the counts.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import summary_record
from ringtool.trace.sink import OutputBase


class QuietOutput(OutputBase):
    """The runner's output protocol, printing only notes and the summary."""

    def __init__(self, stream: TextIO, err: TextIO | None = None) -> None:
        self.stream = stream
        self.err = err or sys.stderr

    def start(self, sources: list[str], notes: list[str]) -> None:
        pass

    def batch(self, records: Records) -> None:
        pass

    def stats(self, stats: TraceStats) -> None:
        pass

    def summary(self, stats: TraceStats) -> None:
        self.stream.write(json.dumps(summary_record(stats)) + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        print(f"ringtool trace: {printable(text)}", file=self.err, flush=True)


__all__ = ["QuietOutput"]
