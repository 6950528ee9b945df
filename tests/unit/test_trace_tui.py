"""The TUI without a kernel: rendering fits 80x24, keys, terminal restored on errors."""

from __future__ import annotations

import io
import os
import pty
import termios

import numpy as np
import pytest
from rich.console import Console

from ringtool.trace.events import Decoder
from ringtool.trace.layout import load_layout
from ringtool.trace.stats import TraceStats
from ringtool.trace.tui import TraceTui, sparkline


def _stats() -> TraceStats:
    lay = load_layout()
    st = TraceStats(lay.type_names, 2, ["exec", "open", "syscalls"], start=0.0)
    arr = np.zeros(50, dtype=lay.event)
    arr["h"]["type"] = lay.type_id("open")
    arr["h"]["pid"] = np.arange(50) % 7
    arr["h"]["comm"] = b"worker"
    st.add_batch(arr)
    st.observe_fill({0: 0.25, 1: 0.5})
    st.tick(drops_cpu=[0, 5], drops_source={"open": [0, 5]}, syscall_hist={0: {12: 9}}, now=1.0)
    return st


def test_sparkline() -> None:
    assert sparkline([], 5) == ""
    assert sparkline([0, 0], 5) == "▁▁"
    assert sparkline([1, 2, 4, 8], 3) == "▂▄█"


@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40)])
def test_render_fits(w: int, h: int) -> None:
    lay = load_layout()
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, force_terminal=True, color_system=None)
    tui = TraceTui(Decoder(lay), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    arr = np.zeros(3, dtype=lay.event)
    arr["h"]["type"] = lay.type_id("open")
    arr["h"]["comm"] = b"worker"
    arr["data"] = b"/some/path/" + b"p" * 200
    tui.batch(arr, [])
    tui.stats(_stats())
    console.print(tui.render(), height=h)
    lines = buf.getvalue().splitlines()
    assert len(lines) == h
    assert all(len(line) <= w for line in lines)
    text = "\n".join(lines)
    for part in ("per CPU", "FILL%", "events/s", "top processes", "top syscalls", "recent",
                 "q quit", "worker", "25.0", "50.0"):  # fmt: skip
        assert part in text, part


def test_keys_and_terminal_restored_after_an_error() -> None:
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        lay = load_layout()
        console = Console(file=io.StringIO(), width=80, height=24, force_terminal=True)
        tui = TraceTui(Decoder(lay), console=console, input_fd=slave)
        with pytest.raises(RuntimeError), tui:
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak while live
            os.write(master, b"ps/wor\r")
            assert tui.handle_input() is False
            assert tui.paused and tui.sort == 1 and tui.filter == "wor"
            os.write(master, b"q")
            assert tui.handle_input() is True
            raise RuntimeError("boom")
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)
