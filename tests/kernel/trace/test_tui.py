"""The ``ringtool trace`` TUI in a real terminal (tmux)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.tmux import RUN, Terminal, needs_tmux

# host_only: the dashboard's (or the columns') drawing and keys on a terminal, nothing
# of the kernel's version; the maps and rings they read are tested on every kernel
# (the all_kernels tests). CI runs these on the host.
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


@needs_tmux
@pytest.mark.parametrize(("w", "h"), [(100, 30), (80, 24)])
def test_tui_in_tmux(w: int, h: int, tmp_path: Path) -> None:
    cmd = (
        f"{RUN} trace --interval 0.5; "
        "echo EXITED rc=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-*icanon'; sleep 60"
    )
    term = Terminal(cmd, w, h)
    try:
        for _ in range(3):
            (tmp_path / "poke").write_text("x")
        screen = term.wait_for("per CPU", "events/s", "FILL%", "q quit")
        lines = screen.splitlines()
        assert lines[0].startswith("ringtool trace") and "events/s" in lines[0]
        assert "top syscalls" in screen and "recent exec/open/net" in screen
        assert any(line.split()[:1] == ["0"] for line in lines)  # CPU 0's row
        term.send("p")
        term.wait_for("[PAUSED]")
        term.send("q")
        screen = term.wait_for("EXITED rc=0", "events in", "icanon")  # stty ran
        tail = screen.split("EXITED rc=0", 1)[1].split()
        assert tail[:1] == ["icanon"]  # canonical mode is back
        assert "per CPU" not in screen  # the alternate screen is gone
    finally:
        term.close()


def _ringtool_pid(term: Terminal) -> int:
    shell = str(term.shell_pid())
    out = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
    assert out, "ringtool is not running in the pane"
    return int(out[0])


def _scaled(cell: str) -> float:
    """A number cell as the TUI scales it (``950``, ``10.8k``, ``8.53M``)."""
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}.get(cell[-1:], 1.0)
    return float(cell[:-1] if mult != 1.0 else cell) * mult


def _cpu_rows(screen: str) -> list[list[str]]:
    """The per-CPU table's rows: CPU FILL% EV/S DROPS LOST (and the table beside)."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if "FILL%" in line) + 2
    rows = []
    for line in lines[start:]:
        f = line.split()
        if not f or not f[0].isdigit() or len(f) < 5:
            break
        rows.append(f[:5])
    return rows


@needs_tmux
def test_tui_shows_drops_of_a_tiny_buffer(tmp_path: Path) -> None:
    import os
    import signal

    cmd = f"{RUN} trace --events open --buffer-pages 1 --interval 0.5; sleep 60"
    term = Terminal(cmd, 100, 30)
    try:
        term.wait_for("per CPU", "events/s")
        pid = _ringtool_pid(term)
        os.kill(pid, signal.SIGSTOP)  # the consumer stalls: 4 KiB rings overflow
        try:
            target = tmp_path / "hot"
            target.write_text("x")
            for _ in range(3000):
                target.open().close()
        finally:
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 30
        while True:
            rows = _cpu_rows(term.screen())
            drops = sum(_scaled(r[3]) for r in rows)
            if drops > 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert drops > 0, rows
        term.send("q")
        screen = term.wait_for("events in")
        summary = next(line for line in screen.splitlines() if "events in" in line)
        assert int(summary.split(", ")[1].split()[0]) > 0  # "N events in Ts, D dropped"
    finally:
        term.close()


OPENER = """
import sys, time
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[1])
sys.stdin.readline()  # the trace is running
while True:
    for path in sys.argv[2:]:
        open(path).close()
    time.sleep(0.2)
"""
HOSTILE_COMM = "[/x]\x1b[2Jq"
HOSTILE_NAMES = ("[/x]", "[bold]x[/bold]", "e\x1b[2Jz", "\x1b]52;c;eA\x07")


@needs_tmux
def test_tui_shows_hostile_names_literally() -> None:
    """File names and a comm with rich markup and terminal escape sequences, opened by a
    real process: the dashboard keeps running and shows them as text."""
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: fits the tail at 80x24
    paths = [tmp / name for name in HOSTILE_NAMES]
    for p in paths:  # "[/x]" is the file "x]" in the directory "["
        p.parent.mkdir(exist_ok=True)
        p.write_text("x")
    opener = subprocess.Popen(
        [sys.executable, "-c", OPENER, HOSTILE_COMM, *map(str, paths)],
        stdin=subprocess.PIPE, text=True,
    )  # fmt: skip
    cmd = f"{RUN} trace --events open -p {opener.pid} --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 80, 24)
    try:
        term.wait_for("per CPU", "events/s", "q quit")
        assert opener.stdin is not None
        opener.stdin.write("go\n")
        opener.stdin.flush()
        # (80 columns: the flags are cut before the path; its end, a file name, and the
        # return value stay)
        shown = ["/[/x] ", "x[/bold] ", "\\x1b[2Jz ", "c;eA\\x07 "]
        screen = term.wait_for(*shown, "[/x]\\x1b[2Jq", timeout=60)
        first = screen.splitlines()[0]
        # several more refreshes with the names on screen: the dashboard survives them
        deadline = time.monotonic() + 60
        while term.screen().splitlines()[0] == first:
            assert time.monotonic() < deadline, "the dashboard stopped refreshing"
            time.sleep(0.3)
        screen = term.wait_for(*shown, "q quit")
        assert "EXITED" not in screen
        term.send("q")
        term.wait_for("EXITED rc=0", "events in")
    finally:
        term.close()
        opener.kill()
        opener.wait()
        shutil.rmtree(tmp)


@needs_tmux
def test_tui_in_a_small_terminal_says_so() -> None:
    cmd = f"{RUN} trace --events open --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 70, 20)
    try:
        screen = term.wait_for("terminal too small: 70x20", "needs 80x24")
        assert "…" not in screen and "per CPU" not in screen
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()
