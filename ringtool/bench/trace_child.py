"""The traced side of ``ringtool bench trace``: ``ringtool trace`` run in a child
process (its own argument parser and :func:`ringtool.trace.runner.run_trace`),
reporting to the bench.

usage: ``python -m ringtool.bench.trace_child FD [--headless-tui] -- TRACE-ARGS...``

``FD`` is the write end of a pipe from the bench. The child writes one line
``ready CPU_S`` once every source is loaded and attached (right after
:meth:`~ringtool.trace.reading.session.TraceSession.start`, which the runner calls when it is
about to read: what follows is the reading loop), CPU_S its user + system CPU seconds
so far (``getrusage``), and at the end one JSON line
``{"summary": ..., "cpu_s": ...}``: the run's summary record
(:func:`ringtool.trace.report.stats_json.summary_record`: events delivered, kernel drops; the
same for every output, also those that print no summary on stdout) and the CPU seconds
at the end.

``--headless-tui``: the output is :class:`HeadlessTui`, the TUI's per-batch path
(:meth:`TraceTui.batch`) and its whole screen rendered once per interval into a
console writing to ``/dev/null``: what the TUI costs without a terminal.

Only the bench runs this; the hooks are subclasses of the runner's own classes,
passed as :class:`~ringtool.trace.runner.RunParts` (the real sources, stats and outputs
run unchanged).
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import sys
from typing import Any, TextIO

from ringtool.event.decode import Decoder
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import summary_record
from ringtool.trace.sink import OutputBase, Records


class HeadlessTui(OutputBase):
    """The TUI output without a terminal (see the module doc)."""

    def __init__(self, decoder: Decoder, interval: float) -> None:
        from rich.console import Console

        from ringtool.trace.dashboard.tui import TraceTui

        self._sink = open(os.devnull, "w")  # noqa: SIM115  # closed in summary()
        console = Console(file=self._sink, width=120, height=40, force_terminal=False)
        self.tui = TraceTui(decoder, interval=interval, console=console, input_fd=-1)
        self.console = console

    @property
    def wants_cost(self) -> bool:
        return self.tui.wants_cost

    @property
    def wants_conns(self) -> bool:
        return self.tui.wants_conns

    def start(self, sources: list[str], notes: list[str]) -> None:
        self.tui.start(sources, notes)

    def batch(self, records: Records) -> None:
        self.tui.batch(records)

    def stats(self, stats: TraceStats) -> None:
        self.tui.stats(stats)
        self.console.print(self.tui.render())  # what a redraw renders

    def summary(self, stats: TraceStats) -> None:
        self._sink.close()

    def note(self, text: str) -> None:
        self.tui.note(text)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    fd = int(argv[0])
    headless = "--headless-tui" in argv[1 : argv.index("--")]
    trace_args = argv[argv.index("--") + 1 :]
    from ringtool.cli.main import build_parser, guarded
    from ringtool.cli.trace import check, settings
    from ringtool.export.trace_hook import hook_options
    from ringtool.trace.outputs import RunConfig, make_output
    from ringtool.trace.reading.session import TraceSession
    from ringtool.trace.runner import RunParts, run_trace
    from ringtool.trace.sink import Output

    report = os.fdopen(fd, "w", buffering=1)
    seen: list[TraceStats] = []

    class ReportingSession(TraceSession):
        reported = False

        def start(self) -> float:
            attached = super().start()
            if not self.reported:  # the runner's call, after every program is attached
                self.reported = True
                report.write(f"ready {_cpu_s()}\n")
            return attached

    class KeptStats(TraceStats):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self)

    def make_headless(cfg: RunConfig, decoder: Decoder, stream: TextIO) -> Output[TraceStats]:
        return HeadlessTui(decoder, cfg.interval)

    args = build_parser("trace").parse_args(["trace", *trace_args])
    parts = RunParts(ReportingSession, KeptStats, make_headless if headless else make_output)

    def call() -> int:
        check(args)  # the flag combinations, as the CLI checks them
        opts, cfg = settings(args, hook_options(args))
        if headless:  # the dashboard's kernel side too: every process's syscall histograms
            opts = dataclasses.replace(opts, per_process=True)
        return run_trace(opts, cfg, parts=parts)

    status = guarded("ringtool trace", call)  # the CLI's handling of errors and exits
    if seen:
        summary = summary_record(seen[-1])
        report.write(json.dumps({"summary": summary, "cpu_s": _cpu_s()}) + "\n")
    report.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
