"""The TUI without a kernel: rendering fits 80x24, keys, terminal restored on errors."""

from __future__ import annotations

import io
import os
import pty
import re
import termios

import numpy as np
import pytest
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.trace.dashboard.tui import TraceTui, sparkline
from ringtool.trace.reading.latency_buckets import bucket_of
from ringtool.trace.report.stats import TraceStats
from tests.helpers.stats import new_stats, open_batch


def _stats() -> TraceStats:
    st = new_stats()
    st.add_batch(open_batch(np.arange(50) % 7, b"worker"))
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
    tui.batch(Records(arr))
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


def _big_stats() -> TraceStats:
    """Counts that do not fit their columns unscaled (10,849 drops, 8,528,577 events)."""
    lay = load_layout()
    st = TraceStats(lay.type_names, 2, ["exec", "open", "syscalls"], start=0.0)
    arr = np.zeros(3, dtype=lay.event)
    arr["h"]["type"] = lay.type_id("open")
    arr["h"]["pid"] = [4194001, 4194002, 4194003]
    arr["h"]["comm"] = b"worker-long-nam"
    st.add_batch(arr)
    st.procs[4194001][1] = 8_528_577
    st.tick(drops_cpu=[10_849, 0], lost_cpu={1: 123_456_789},
            drops_source={"open": [10_849, 0]},
            syscall_hist={0: {bucket_of(30 * 10**9): 9}, 1: {bucket_of(4000): 10**6}},
            now=0.001)  # fmt: skip
    return st


@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40), (200, 60)])
def test_numbers_are_scaled_not_cut(w: int, h: int) -> None:
    lay = load_layout()
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(lay), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    tui.stats(_big_stats())
    console.print(tui.render(), height=h)
    text = buf.getvalue()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    # CPU FILL% EV/S DROPS LOST of each CPU; the procs table shares the lines
    assert any(line.startswith("0 0.0 3000 10.8k 0 ") for line in lines), text
    assert any(line.startswith("1 0.0 0 0 123M ") for line in lines), text
    assert re.search(r" 4194001 worker-\S* 8\.53M 8\.53M$", "\n".join(lines), re.M), text
    # p99 with the 2 significant digits the buckets back
    assert any(line.startswith("sys_1 1.00M 1.00G 4.0µs ") for line in lines), text
    assert any(line.startswith("sys_0 9 9000 30s ") for line in lines), text


@pytest.mark.parametrize(("w", "h"), [(79, 24), (80, 23), (40, 10)])
def test_too_small_says_so(w: int, h: int) -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1)
    tui.start(["open"], [])
    tui.stats(_big_stats())
    console.print(tui.render(), height=h)
    text = " ".join(buf.getvalue().split())
    assert f"terminal too small: {w}x{h}, ringtool trace needs 80x24" in text
    assert "per CPU" not in text


def test_per_cpu_title_says_when_drops_happened() -> None:
    """A burst of drops is shown with when it happened (and its size), not only as a
    total; a CPU row is red only while it drops (or is nearly full)."""
    lay = load_layout()
    buf = io.StringIO()
    console = Console(file=buf, width=120, height=40, color_system="standard", force_terminal=True)
    tui = TraceTui(Decoder(lay), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    st = _stats()  # 5 drops on CPU 1 in the interval that ended 1 s after the start
    tui.stats(st)
    console.print(tui.render(), height=40)
    red_now = buf.getvalue()
    assert "last drops at up 0:00:01 (+5)" in red_now
    st.tick(drops_cpu=[0, 5], drops_source={"open": [0, 5]}, now=75.0)  # no new drops
    tui.stats(st)
    buf.seek(0)
    buf.truncate()
    console.print(tui.render(), height=40)
    later = buf.getvalue()
    assert "last drops at up 0:00:01 (+5)" in later  # still says when
    red = "\x1b[31m"
    assert red in red_now and red not in later  # CPU 1's row: red while dropping only
