"""The dashboard at 200x60 in tmux: the process table uses the room, and Enter on a
process opens its drill-down with its own syscalls (counted in the kernel for that
process only), their p99 and latency histograms; ``--hist`` prints bcc-style
histograms at the end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.tmux import RUN, Terminal, needs_tmux
from tests.helpers.trace import Trace
from tests.helpers.tui import opener_script

# host_only: the dashboard's (or the columns') drawing and keys on a terminal, nothing
# of the kernel's version; the maps and rings they read are tested on every kernel
# (the all_kernels tests). CI runs these on the host.
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

# The first screen comes after BCC compiled the trace's programs: seconds here, over a
# minute in the emulated test VM while the twelve openers run (make test-vm).
FIRST_SCREEN = 180.0

# Names itself, then opens its file 5 times a second until killed (twelve of them at 20
# a second kept the emulated VM's CPUs busy).
OPENER = opener_script(0.2)


@pytest.fixture
def openers(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Twelve named processes that open a file steadily."""
    target = tmp_path / "f"
    target.write_text("x")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, f"rtop{i:02d}", str(target)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(12)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(10)


@needs_tmux
def test_200x60_process_table_uses_the_room(openers: list[subprocess.Popen[str]]) -> None:
    cmd = f"{RUN} trace --events open --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 200, 60)
    try:
        term.wait_for("top processes", timeout=FIRST_SCREEN)
        term.send("/", "rtop", "Enter")  # only them: others come and go
        names = [f"rtop{i:02d}" for i in range(12)]
        # every one of them listed, none cut (waited for: a slow machine, e.g. the TCG
        # VM, shows the names in the event tail before all twelve had an interval)
        screen = term.wait_for("filter: comm~rtop", "top processes  1/12", *names)
        assert all(len(line) <= 200 for line in screen.splitlines())
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()


# A drill-down row: SYSCALL COUNT /S P99 and the latency sparkline between its range.
DRILL_ROW = re.compile(
    r"\s*(?P<name>\w+)\s+[\d.]+[kM]?\s+[\d.]+[kM]?\s+[\d.]+(?:ns|µs|ms|s)\s+.*[▁-█]"
)


def _drill_row(screen: str, name: str) -> str | None:
    """``name``'s row in the drill-down: the panel left of "top syscalls", which lists
    every process's syscalls (its rows must not count). Until the first interval after
    Enter the drill-down says it reads them at the next interval."""
    lines = screen.splitlines()
    split = next((ln.index("top syscalls") for ln in lines if "top syscalls" in ln), 0)
    for ln in lines:
        m = DRILL_ROW.match(ln[:split])
        if m and m["name"] == name:
            return ln[:split]
    return None


@needs_tmux
def test_200x60_drill_down_shows_the_process_syscalls(
    openers: list[subprocess.Popen[str]],
) -> None:
    target = openers[3]
    cmd = f"{RUN} trace -p {target.pid} --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, 200, 60)
    try:
        term.wait_for("top processes", "rtop03", timeout=FIRST_SCREEN)
        term.send("Enter")
        title = f"process {target.pid}  rtop03  (Esc returns)"
        screen = term.wait_for(
            title,
            "syscalls since the trace started",
            "top syscalls",
            match=lambda screen: _drill_row(screen, "openat") is not None,
        )
        assert f"process {target.pid}: recent exec/open/net" in screen
        term.send("Escape")
        screen = term.wait_for("top syscalls", "sources")
        assert title not in screen
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        term.close()


def test_hist_at_the_end(openers: list[subprocess.Popen[str]]) -> None:
    pid = openers[0].pid
    proc = Trace("--no-tui", "-p", str(pid), "-d", "1.5", "--hist")
    lines, _ = proc.finish()
    text = "\n".join(lines)
    m = re.search(r"^syscall openat: ([\d,]+) calls, p99 \S+$", text, re.M)
    assert m, text[-3000:]
    block = text[m.end() :].split("\n\n")[0].splitlines()
    assert block[1].split() == ["nsecs", ":", "count", "distribution"]
    rows = [ln for ln in block[2:] if "->" in ln]
    assert sum(int(r.split(":")[1].split()[0]) for r in rows) == int(m.group(1).replace(",", ""))

    proc = Trace("--json", "-p", str(pid), "-d", "1", "--hist")
    lines, _ = proc.finish()
    objs = [json.loads(line) for line in lines]
    hist = {o["syscall"]: o for o in objs if o["type"] == "hist"}
    assert objs.index(next(o for o in objs if o["type"] == "summary")) < len(objs) - len(hist)
    openat = hist["openat"]
    assert openat["count"] == sum(b[2] for b in openat["buckets"]) > 0
    assert all(lo <= hi for lo, hi, _ in openat["buckets"])
