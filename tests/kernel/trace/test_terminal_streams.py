"""On a real terminal (tmux), a command that asks for a stream gets one, and a stream
is quiet: events on stdout, notes on stderr, a stats line only with ``--stats``.

Before: ``--json`` wrote a ~700-character ``stats`` object to the terminal every second
between the events, and a command that asked for no output format opened the
dashboard even where it only made sense as a stream (``--stats``: no such option)."""

from __future__ import annotations

import pytest

from tests.helpers.tmux import RUN, Terminal, needs_tmux

# host_only: which output ringtool picks for a terminal: nothing of the kernel's version
pytestmark = [pytest.mark.kernel, pytest.mark.host_only, needs_tmux]

#: Keeps the pane after the trace ended, so its last screen can be read.
AFTER = "; echo EXIT=$?; sleep 600"
#: A name no process has: the screen holds what the trace says, not events (the tests'
#: own tmux commands are execs too).
NOBODY = "-c zz-no-such"


def _screen(args: str) -> str:
    """The screen of ``ringtool trace ARGS`` in a 160x50 terminal once it exited 0."""
    term = Terminal(f"{RUN} trace {args}{AFTER}", 160, 50)
    try:
        return term.wait_for("EXIT=0", timeout=240)
    finally:
        term.close()


def test_json_on_a_terminal_has_no_stats_lines() -> None:
    screen = _screen(f"--json --events exec {NOBODY} -d 3")
    assert '{"type": "start"' in screen and '{"type": "summary"' in screen, screen
    assert '"type": "stats"' not in screen, screen


def test_stats_streams_columns_with_a_line_per_interval() -> None:
    screen = _screen(f"--stats --events exec -x {NOBODY} -d 3 --interval 0.5")
    lines = screen.splitlines()
    assert "Tracing... Ctrl-C to end." in lines, screen
    assert any(line.split()[:3] == ["TS", "CPU", "PID"] for line in lines), screen
    assert sum(line.startswith("-- ") and "ev/s" in line for line in lines) >= 3, screen
    assert "events/s (max" not in screen  # not the dashboard
