"""The dashboard keeps what the user looks at (tmux, real BPF): a quiet process's
recent events beside a busy one's, in the filter and the drill-down; exited processes
leave the table; the selection follows its process across a re-sort; the screen says
what start-up does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.tmux import RUN, Terminal, needs_tmux
from tests.helpers.tui import opener_script

# host_only: the dashboard's per-process views: ringtool's own screen, nothing of the
# kernel's version (CI runs it on the host, not again in the emulated VM).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

# BCC compiles before the first screen: seconds here, a minute or more in the TCG VM.
FIRST_SCREEN = 180.0
QUIET_OPENS = 20

# Names itself, says ready, waits for a line on stdin, then opens its file N times at
# 10 a second and stays (alive: it must not leave the table).
QUIET = """
import sys, time
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[3])):
    open(sys.argv[2]).close()
    time.sleep(0.1)
print("done", flush=True)
time.sleep(600)
"""

# Names itself and opens its file in a tight loop until killed.
BUSY = opener_script(0)


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], subprocess.Popen[str], str]]:
    """A busy opener (zdashbusy) and a quiet one (zdashquiet) waiting for "go"; the quiet
    one's file name."""
    marker = tmp_path / "zdq"
    marker.write_text("x")
    (tmp_path / "busy").write_text("x")
    busy = _start(BUSY, "zdashbusy", str(tmp_path / "busy"))
    quiet = _start(QUIET, "zdashquiet", str(marker), str(QUIET_OPENS))
    try:
        yield busy, quiet, f"/{marker.name} "  # its file name whole (flags are cut first)
    finally:
        for p in (busy, quiet):
            p.kill()
            p.wait(10)


def _recent_count(screen: str) -> int | None:
    m = re.search(r"recent exec/open/net \((\d+)\)", screen)
    return int(m.group(1)) if m else None


@needs_tmux
@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40), (200, 60)])
def test_quiet_process_keeps_its_events_in_filter_and_drill_down(
    w: int, h: int, pair: tuple[subprocess.Popen[str], subprocess.Popen[str], str]
) -> None:
    busy, quiet, marker = pair
    cmd = (f"{RUN} trace --events open,exec --interval 0.3 --buffer-pages 4096 --no-cache; "
           "echo EXITED rc=$?; sleep 60")  # fmt: skip
    term = Terminal(cmd, w, h)
    try:
        # start-up: the first frames say what it does and for how long
        # (BCC compiles each source for a second or more: a capture every 0.3 s sees it;
        # --no-cache: the run's program cache would load them in milliseconds)
        first = term.wait_for("ringtool trace: starting (", "compiling bpf/trace_",
                              timeout=FIRST_SCREEN)  # fmt: skip
        assert re.search(r"compiling bpf/trace_\w+\.c \(source \w+\)\s+\d+\.\d s", first), first
        term.wait_for("per CPU", "top processes", timeout=FIRST_SCREEN)
        assert quiet.stdin is not None and quiet.stdout is not None
        quiet.stdin.write("go\n")
        quiet.stdin.flush()
        assert quiet.stdout.readline() == "done\n"  # all its opens made
        term.send("/", "zdashquiet", "Enter")
        # every open of the quiet one that reached ringtool is kept, however many the
        # busy one made since: as many as the table counts for it, all it did unless
        # the kernel dropped some (the machine overloaded: the ring was full)
        counted = re.compile(rf"\b{quiet.pid}\s+zdash\S*\s+(\d+)\s+\d+")

        def same(screen: str) -> bool:  # (all read: the dashboard alone reads its
            m = counted.search(screen)  # rings up to 250 ms late, then draws)
            done = m is not None and (int(m.group(1)) == QUIET_OPENS or "last drops at" in screen)
            return done and m is not None and _recent_count(screen) == int(m.group(1)) > 0

        screen = term.wait_for("filter: comm~zdashquiet", marker, match=same)
        n = _recent_count(screen)
        assert n is not None and n <= QUIET_OPENS
        if re.search(r"last drops at", screen) is None:
            assert n == QUIET_OPENS
        rows = [ln for ln in screen.splitlines() if marker in ln]
        assert rows and all(str(quiet.pid) in ln and "zdashquiet" in ln for ln in rows)
        assert all(" = 3" in ln for ln in rows)  # the return value, kept whole
        assert all(len(ln) <= w for ln in screen.splitlines())
        term.send("Enter")  # the drill-down of the selected (the only) process
        term.wait_for(f"process {quiet.pid}: recent exec/open/net ({n})", marker)
        term.send("Escape")  # leaves the drill-down
        term.wait_for("filter: comm~zdashquiet", absent=("(Esc returns)",))
        term.send("Escape")  # the main view: clears the filter
        term.wait_for("top processes", absent=("filter: comm~",))
        assert busy.poll() is None
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()


@needs_tmux
def test_selection_follows_the_process_across_a_sort(
    pair: tuple[subprocess.Popen[str], subprocess.Popen[str], str],
) -> None:
    busy, quiet, _ = pair
    cmd = f"{RUN} trace --events open --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 120, 40)
    try:
        term.wait_for("per CPU", timeout=FIRST_SCREEN)
        assert quiet.stdin is not None
        quiet.stdin.write("go\n")
        quiet.stdin.flush()
        term.send("/", "zdash", "Enter")  # zdashbusy (most events) first, then zdashquiet
        both = re.compile(rf"\b{busy.pid}\s+zdashbusy\b[\s\S]*\b{quiet.pid}\s+zdashquiet\b")
        term.wait_for("top processes  1/2", match=lambda s: bool(both.search(s)))
        term.send("j")  # the quiet one, second
        term.wait_for("top processes  2/2")
        term.send("<", "I")  # by COMM, Z first: zdashquiet is now the first row
        term.wait_for("COMM▼", "top processes  1/2")  # it moved, the selection with it
        term.send("Enter")
        term.wait_for(f"process {quiet.pid}  zdashquiet")
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()


@needs_tmux
@pytest.mark.parametrize("keep", [False, True])
def test_exited_processes_leave_the_table(keep: bool, tmp_path: Path) -> None:
    flag = " --keep-exited" if keep else ""
    cmd = f"{RUN} trace --events open,exec --interval 0.3{flag}; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 80, 24)
    target = tmp_path / "f"
    target.write_text("x")
    try:
        term.wait_for("per CPU", timeout=FIRST_SCREEN)
        term.send("/", "zdashshort", "Enter")
        short = _start(QUIET, "zdashshort", str(target), "10")
        assert short.stdin is not None and short.stdout is not None
        short.stdin.write("go\n")
        short.stdin.flush()
        row = re.compile(rf"\b{short.pid}\s+zdash\S*\s+\d")  # (80 columns cut the comm)
        term.wait_for(match=lambda s: bool(row.search(s)))
        assert short.stdout.readline() == "done\n"
        short.kill()
        short.wait(10)
        if keep:
            term.wait_for("[keep exited]", match=lambda s: bool(row.search(s)))
        else:  # dimmed a few seconds, then gone (its recent events with it)
            term.wait_for("top processes", match=lambda s: not row.search(s))
            screen = term.wait_for("recent exec/open/net (0)")
            assert not re.search(rf"\b{short.pid}\s+zdash", screen)  # no row, no event
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()


# Names itself argv[1], forks a child that names itself argv[2]; both open argv[3]
# 10 times a second until killed; the parent says "ready" with the child's pid.
TREE = """
import os, sys, time
pid = os.fork()
name = sys.argv[1] if pid else sys.argv[2]
with open("/proc/self/comm", "w") as f:
    f.write(name)
if pid:
    print("ready", pid, flush=True)
while True:
    open(sys.argv[3]).close()
    time.sleep(0.1)
"""


@needs_tmux
def test_f5_draws_the_child_under_its_parent(tmp_path: Path) -> None:
    path = tmp_path / "ztree"
    path.write_text("x")
    cmd = f"{RUN} trace --events open,exec --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 120, 40)
    proc = None
    try:
        term.wait_for("per CPU", timeout=FIRST_SCREEN)
        proc = subprocess.Popen([sys.executable, "-c", TREE, "zdtreepar", "zdtreekid",
                                 str(path)], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)  # its group: parent and child  # fmt: skip
        assert proc.stdout is not None
        ready, kid = proc.stdout.readline().split()
        assert ready == "ready"
        term.send("/", "zdtree", "Enter")
        listed = re.compile(rf"\b{proc.pid}\s+zdtreepar\b[\s\S]*\b{kid}\s+zdtreekid\b|"
                            rf"\b{kid}\s+zdtreekid\b[\s\S]*\b{proc.pid}\s+zdtreepar\b")  # fmt: skip
        term.wait_for("top processes  1/2", match=lambda s: bool(listed.search(s)))
        term.send("F5")
        # the tree: the parent's row, and right under it the child's, indented
        tree = re.compile(rf"\b{proc.pid}\s+zdtreepar\b.*\n.*\b{kid}\s+└─zdtreekid\b")
        term.wait_for("F5 list", match=lambda s: bool(tree.search(s)))
        term.send("F5")  # back to the list: no indentation
        term.wait_for("F5 tree", absent=("└─zdtreekid",))
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        term.close()
