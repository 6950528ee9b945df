"""Every key the dashboard's help overlay lists reacts, in a real terminal (tmux), and
the mouse selects a row and sorts by a column; nothing wraps at 80x24."""

from __future__ import annotations

import re

import pytest

from ringtool.trace.dashboard.tui_help import KEYS
from tests.helpers.tmux import RUN, Terminal, needs_tmux

# host_only: the dashboard's keys and mouse: ringtool's own screen, nothing of the
# kernel's version (CI runs it on the host, not again in the emulated VM).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

FIRST_SCREEN = 180.0

#: On the main screen only (not the help, cost panel or a drill-down): at 80 columns
#: with tcp's NET column the process table takes the per-CPU table's room.
MAIN = "top syscalls"
#: Each key of the overlay (as tmux names it): the keys sent, then what the screen shows.
#: (q, F10 and the mouse are checked on their own below.)
REACTIONS: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "? F1": [(("?",), "any other key closes"), (("Escape",), MAIN),
             (("F1",), "any other key closes"), (("Down",), "help  2-"),
             (("x",), MAIN)],
    "p P": [(("p",), ""), (("P",), "[PAUSED]")],  # (paused before: rows stay in place)
    "/ F4": [(("/",), "filter by comm:"), (("Escape",), ""), (("F4",), "filter by comm:"),
             (("Escape",), "")],
    "F3": [(("F3",), "search comm:"), (("Escape",), "")],
    "< >  F6": [((">",), "EV/IV▼"), (("<",), "EVENTS▼"), (("F6",), "EV/IV▼"), (("<",), "EVENTS▼")],
    "I": [(("I",), "EVENTS▲"), (("I",), "EVENTS▼")],
    "F5": [(("F5",), "F5 list"), (("F5",), "F5 tree")],
    "e": [(("e",), "[keep exited]"), (("e",), "")],
    "s S": [(("s",), "sort: rate"), (("S",), "sort: p99"), (("s",), "sort: count")],
    "o O": [(("o",), "tcp: newest (o)"), (("O",), "tcp: longest-lived (o)"),
            (("o",), "tcp: busiest (o)")],
    "w": [(("s", "s"), "(by p99, no waits: w)"), (("w",), "(by p99)"), (("w", "s"), "(by count)")],
    "Tab": [(("Tab",), "▸ recent"), (("Tab",), "▸ top processes")],
    # Home first: F5's tree (parents read from /proc) keeps the selected process, which
    # the list then shows where it sorts; the arrows move from the top row
    "Home End  g G": [(("End",), ""), (("Home",), "top processes  1/"), (("G",), ""),
                      (("g",), "top processes  1/")],
    "↑ ↓ k j  PgUp PgDn": [(("Down",), "top processes  2/"), (("Up",), "top processes  1/"),
                           (("j",), "top processes  2/"), (("k",), "top processes  1/"),
                           (("PageDown",), "top processes  "), (("PageUp",), "top processes  1/")],
    # the cost panel: its BPF statistics turn on as it opens ("BPF run-time statistics
    # warming up" until a whole interval, which a paused dashboard does not take)
    "c": [(("c",), "BPF run"), (("c",), "top processes"), (("c",), "BPF run"),
          (("Escape",), "top processes")],
    "n": [(("n",), "(Esc returns)"), (("Escape",), "top processes")],
    "Enter": [(("Enter",), "(Esc returns)")],
    "Esc": [(("Escape",), "top processes"), (("/", "zznothing", "Enter"), "filter: comm~zznothing"),
            (("Escape",), "")],
}  # fmt: skip
#: What must be gone after the keys (the reaction undone).
GONE = {"p": "[PAUSED]", "/ F4": "filter by comm:", "F3": "search comm:", "e": "[keep exited]",
        "Esc": "filter: comm~"}  # fmt: skip


ESC_LEAVES = ("(Esc returns)", "filter by comm:", "search comm:", "any other key closes")


def _check_80x24(screen: str) -> None:
    """No line wrapped: the frame's rows are where they belong."""
    lines = screen.splitlines()
    assert lines[0].startswith("ringtool trace") and lines[1].startswith("events/s"), screen
    assert lines[2].lstrip().startswith("▸ top processes") or "per CPU" in lines[2], screen
    # the first table's heads on one line: per CPU, or (tcp's NET column at 80 columns)
    # the process table in its room
    assert lines[3].split()[:2] in (["CPU", "FILL%"], ["PID", "COMM"]), screen
    assert " q quit" in lines[23], screen  # the footer on the last line


@needs_tmux
def test_every_key_of_the_help_reacts_at_80x24() -> None:
    assert {k for k, _ in KEYS} - {"q Q F10", "mouse"} == set(REACTIONS)  # the overlay's keys
    # tcp: the connections panel's order has a key (exec left out: the header keeps
    # room for the filter after the --events shown)
    cmd = f"{RUN} trace --events open,syscalls,tcp --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 80, 24)
    try:
        screen = term.wait_for(MAIN, "top processes  1/", "EVENTS▼", timeout=FIRST_SCREEN)
        _check_80x24(screen)
        term.wait_for(match=lambda s: bool(re.search(r"top processes  \d+/([3-9]|\d\d)", s)))
        term.send("p")  # frozen: the rows keep their places while the keys move in them
        term.wait_for("[PAUSED]")
        for key, steps in REACTIONS.items():
            for keys, shown in steps:
                term.send(*keys)
                absent = (GONE[key],) if not shown and key in GONE else ()
                if keys == ("Escape",):  # what Esc leaves is gone before the next key (an
                    absent += ESC_LEAVES  # Esc and a key at once are Alt+key to a terminal)
                term.wait_for(*(shown,) if shown else (), absent=absent)
            if key not in ("? F1", "Enter"):  # (Enter leaves the drill-down open)
                _check_80x24(term.wait_for(MAIN, absent=("(Esc returns)",)))
        term.send("F10")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()


def _mouse(term: Terminal, x: int, y: int) -> None:
    """A left click at cell ``x``, ``y`` (0-based) as an xterm in SGR mode sends it."""
    term.send("-l", f"\x1b[<0;{x + 1};{y + 1}M")


@needs_tmux
@pytest.mark.parametrize(("w", "h"), [(80, 24), (200, 60)])
def test_mouse_selects_a_row_and_sorts(w: int, h: int) -> None:
    cmd = f"{RUN} trace --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, w, h)
    try:
        screen = term.wait_for("per CPU", "EVENTS▼", timeout=FIRST_SCREEN)
        screen = term.wait_for(
            match=lambda s: bool(re.search(r"top processes  \d+/([3-9]|\d\d)", s))
        )
        term.send("p")  # frozen: the rows stay where the clicks land
        screen = term.wait_for("[PAUSED]")
        lines = screen.splitlines()
        title = next(i for i, ln in enumerate(lines) if "top processes" in ln)
        head = lines[title + 1]
        _mouse(term, head.index("COMM") + 1, title + 1)  # the COMM header: sort by it
        screen = term.wait_for("COMM▲", absent=("EVENTS▼",))
        third = screen.splitlines()[title + 3 + 2][w // 2 :]  # (the table: the right half)
        pid = re.match(r"\s*(\d+)\s", third)
        assert pid is not None, screen
        _mouse(term, head.index("COMM") + 1, title + 3 + 2)  # the third row shown
        term.send("Enter")  # the drill-down opens the process clicked
        term.wait_for(f"process {pid.group(1)}  ")
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()
