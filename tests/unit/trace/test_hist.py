"""Syscall latency histograms: bcc's log2 rows, the drill-down's sparkline, and the
per-process counts the stats keep for the dashboard's drill-down."""

from __future__ import annotations

import io

from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.reading.latency_buckets import bucket_of
from ringtool.trace.report.hist import format_log2, hist_lines, hist_records, slot_range, spark
from ringtool.trace.report.stats import TraceStats
from tests.helpers.latency import from_log2
from tests.helpers.stats import new_stats


def test_slot_ranges_are_bccs() -> None:
    # bpf_log2l(v) = floor(log2 v) + 1: slot 1 holds 0 and 1, slot s [2**(s-1), 2**s)
    assert [slot_range(s) for s in (1, 2, 3, 11)] == [(0, 1), (2, 3), (4, 7), (1024, 2047)]


def test_format_log2_like_print_log2_hist() -> None:
    assert format_log2({}) == []
    lines = format_log2({11: 200, 12: 50, 14: 1})
    assert lines == [
        "         nsecs : count     distribution",
        " 1024 -> 2047  : 200       |****************************************|",
        " 2048 -> 4095  : 50        |**********                              |",
        " 4096 -> 8191  : 0         |                                        |",
        " 8192 -> 16383 : 1         |                                        |",
    ]


def test_spark_spans_the_used_slots() -> None:
    assert spark({}, 20) == ""
    assert spark({11: 8, 12: 1, 14: 4}, 30) == "1.02µs █▁ ▄ 16.4µs"
    assert len(spark({s: 1 for s in range(1, 40)}, 24)) <= 24  # bars cut to the room
    assert spark({11: 8, 12: 1, 14: 4}, 12) == "█▁ ▄ 16.4µs"  # tight: no lowest latency


def _stats() -> TraceStats:
    return new_stats(syscall_name={0: "read", 257: "openat"}.get)  # type: ignore[arg-type]


def test_end_histograms_text_and_json() -> None:
    st = _stats()
    fast, slow = bucket_of(1500), bucket_of(3000)  # [1472, 1503] and [2944, 3007] ns
    st.tick(syscall_hist={257: {fast: 90, slow: 10}, 0: {bucket_of(20): 3}}, now=1.0)
    text = list(hist_lines(st))
    bar = "*" * 40
    # the rows merge the fine buckets into bcc's log2 ones; p99: the middle of the
    # 99th's bucket (2975.5) with 2 significant digits
    assert text[:5] == ["", "syscall openat: 100 calls, p99 3.0µs",
                        "       nsecs : count     distribution",
                        f"1024 -> 2047 : 90        |{bar}|",
                        f"2048 -> 4095 : 10        |{'*' * 4:<40}|"]  # fmt: skip
    assert "syscall read: 3 calls" in text[6]  # most called first
    records = list(hist_records(st))
    assert records[0] == {"type": "hist", "syscall": "openat", "count": 100, "p99_us": 3.0,
                          "p99_max_error": 1 / 64,
                          "buckets": [[1472, 1503, 90], [2944, 3007, 10]]}  # fmt: skip


def test_drill_counts_are_since_the_trace_started() -> None:
    st = _stats()
    st.tick(drill=(None, {}), now=1.0)
    assert st.drill_key is None and st.drill_syscalls == []
    # opened on a process the kernel has counted since the start: its counts at once
    st.tick(drill=(42, {257: from_log2({11: 10})}), now=2.0)
    (row,) = st.drill_syscalls
    assert (st.drill_key, row.name, row.count, row.rate) == (42, "openat", 10, 0.0)
    st.tick(drill=(42, {257: from_log2({11: 30, 13: 2})}), now=3.0)
    (row,) = st.drill_syscalls
    assert (row.count, row.rate) == (32, 22.0)
    st.tick(drill=("worker", {257: from_log2({11: 40})}), now=4.0)  # by name: its own
    (row,) = st.drill_syscalls
    assert (st.drill_key, row.count, row.rate) == ("worker", 40, 0.0)


def _drilled_tui(w: int, h: int) -> tuple[TraceTui, TraceStats, Console, io.StringIO]:
    """A TUI of ``w`` x ``h`` (rendering into the returned buffer) drilled down into
    process 42 ("worker", 5 events) of fresh statistics."""
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    st = _stats()
    st._count_proc(42, "worker", 5)
    tui.view.drill = 42
    return tui, st, console, buf


def test_drill_down_panel_shows_the_process_syscalls() -> None:
    tui, st, console, buf = _drilled_tui(200, 60)
    assert tui.drill == (42, frozenset({42}))  # what the runner reads of the kernel
    st.tick(drill=(None, {}), now=11.0)  # not asked for yet at this tick
    tui.stats(st)
    console.print(tui.render(), height=60)
    assert "reading its syscalls at the next interval" in buf.getvalue()
    st.tick(drill=(42, {}), now=12.0)
    buf.seek(0)
    buf.truncate()
    console.print(tui.render(), height=60)
    assert "no syscall of it counted" in buf.getvalue()
    st.tick(drill=(42, {257: from_log2({11: 8, 12: 1, 14: 4}), 0: from_log2({5: 2})}), now=13.0)
    buf.seek(0)
    buf.truncate()
    console.print(tui.render(), height=60)
    text = buf.getvalue()
    assert "process 42  worker  (Esc returns)  syscalls since the trace started" in text
    line = next(ln for ln in text.splitlines() if "openat" in ln and "µs" in ln)
    assert "1.02µs █▁ ▄ 16.4µs" in line and " 13 " in line
    assert text.index("openat") < text.index("read ")  # most called first


def test_drill_down_fits_80x24() -> None:
    tui, st, console, buf = _drilled_tui(80, 24)
    st.tick(drill=(42, {}), now=1.0)
    st.tick(drill=(42, {257: from_log2({11: 8_000, 12: 1, 14: 4}), 0: from_log2({5: 2})}), now=2.0)
    tui.stats(st)
    console.print(tui.render(), height=24)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 24 and all(len(ln) <= 80 for ln in lines)
    row = next(ln for ln in lines if "openat" in ln and "16.4µs" in ln)
    assert " 8005 " in row and "1.02µs" in row and "…" not in row  # count, histogram whole
    assert "top syscalls" not in buf.getvalue()  # the drill-down has the row to itself
