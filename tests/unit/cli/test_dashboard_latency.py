"""The dashboard alone (stdout a terminal, no sink streaming the events) reads its
rings at most :data:`DASHBOARD_LATENCY_S` late, not a stream's 50 ms: it draws once an
interval, and keys and stop signals wake it at once. With ``--record`` (a sink
that takes every event) or a stream output, the stream's bound stays. The terminal is
a real pseudo-terminal."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from ringtool.cli.main import build_parser
from ringtool.cli.trace import settings
from ringtool.export.trace_hook import hook_options
from ringtool.trace.outputs import DASHBOARD_LATENCY_S
from ringtool.trace.reading.options import TraceOptions


@contextlib.contextmanager
def _terminal_stdout() -> Iterator[None]:
    """``sys.stdout`` is a pseudo-terminal inside (set in the test's body: pytest sets
    its own capture again between a fixture and the test)."""
    master, slave = os.openpty()
    saved = sys.stdout
    try:
        with os.fdopen(slave, "w") as tty:
            sys.stdout = tty
            yield
    finally:
        sys.stdout = saved
        os.close(master)


def _latency(*argv: str) -> float:
    args = build_parser("trace").parse_args(["trace", *argv])
    with _terminal_stdout():
        opts, _ = settings(args, hook_options(args))
    return opts.max_latency_s


def test_the_dashboard_alone_reads_less_often(tmp_path: Path) -> None:
    assert TraceOptions.max_latency_s < DASHBOARD_LATENCY_S
    assert _latency() == DASHBOARD_LATENCY_S
    assert _latency("-c", "bash") == DASHBOARD_LATENCY_S
    # a sink that takes every event, or a stream: records read as soon as before
    assert _latency("--record", str(tmp_path / "r.arrows")) == TraceOptions.max_latency_s
    assert _latency("--export", "nats://127.0.0.1:4222") == TraceOptions.max_latency_s
    assert _latency("--json") == TraceOptions.max_latency_s
    assert _latency("--no-tui") == TraceOptions.max_latency_s
