"""The dashboard remembers short-lived processes: a drill-down into a process that
exited before Enter was pressed shows the syscalls it made (the kernel counts every
process's from the start of the trace), and ``n`` drills into every process of a name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.tmux import RUN, Terminal, needs_tmux

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

FIRST_SCREEN = 180.0
OPENS = 37  # openat calls of each short-lived process (a count no other call has)

# Names itself argv[1], opens argv[2] OPENS times, and exits.
SHORT = f"""
import sys
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[1])
for _ in range({OPENS}):
    open(sys.argv[2]).close()
"""


def _openat_count(screen: str) -> int | None:
    """The drill-down's openat COUNT (below 120 columns the only syscall table)."""
    for ln in screen.splitlines():
        m = re.match(r"\s*openat\s+(\d+)\s", ln)
        if m:
            return int(m.group(1))
    return None


@needs_tmux
def test_drill_down_into_exited_processes(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    cmd = (f"{RUN} trace -c rtshort --keep-exited --interval 0.3; echo EXITED rc=$?; "
           "sleep 60")  # fmt: skip
    term = Terminal(cmd, 100, 40)  # below 120: the drill-down alone in its row
    try:
        term.wait_for("top processes", timeout=FIRST_SCREEN)
        first = subprocess.Popen([sys.executable, "-c", SHORT, "rtshort", str(target)])
        assert first.wait(60) == 0  # exited before the drill-down is opened
        term.wait_for("rtshort", match=lambda s: "top processes  1/1" in s)
        term.send("Enter")
        screen = term.wait_for(
            f"process {first.pid}  rtshort",
            match=lambda s: (_openat_count(s) or 0) >= OPENS,
        )
        assert "no syscall of it" not in screen
        term.send("Escape")
        term.wait_for("sources", absent=("(Esc returns)",))
        second = subprocess.Popen([sys.executable, "-c", SHORT, "rtshort", str(target)])
        assert second.wait(60) == 0
        term.wait_for(match=lambda s: "top processes  1/2" in s)
        term.send("n")  # by name: both, exited
        term.wait_for(
            "name rtshort (2 processes)",
            match=lambda s: (_openat_count(s) or 0) >= 2 * OPENS,
        )
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()
