"""The cpuwait source's figures on hand-built histograms: rows, quantiles, --hist text
and JSON, the summary, the dashboard's column, a kernel value read as a histogram."""

from __future__ import annotations

import ctypes
import io

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from ringtool.trace.dashboard.tui_panels import CPU_WAIT, procs_table
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.reading.cpuwait_maps import HIST_DTYPE, SLOTS, CpuWaits, WaitHist, hist_of
from ringtool.trace.report.cpuwait import (
    cpuwait_stats,
    cpuwait_summary,
    hist_lines,
    hist_records,
    summary_lines,
    wait_row,
)
from ringtool.trace.report.stats import TraceStats

# slot s holds [2**(s-1), 2**s) us: 90 waits of 4-7 us, 9 of 1-2 ms, 1 of 64-128 ms
BUSY = WaitHist({3: 90, 11: 9, 17: 1}, 100, 90 * 5_000 + 9 * 1_500_000 + 100_000_000, "busy")
IDLE = WaitHist({1: 3}, 3, 3_000, "idle\x1b[31m")


def waits() -> CpuWaits:
    return CpuWaits(BUSY + IDLE, {10: BUSY, 20: IDLE}, lost=2)


def test_a_rows_quantiles_lie_in_the_slot_of_their_rank() -> None:
    row = wait_row(10, BUSY)
    assert 4_000 <= row.p50_ns < 8_000  # rank 50 of 100: in the 4-7 us slot
    assert 1_024_000 <= row.p99_ns <= 2_048_000  # rank 99: the 1-2 ms slot (its top: the last)
    assert (row.count, row.total_ns, row.comm) == (100, BUSY.total_ns, "busy")


def test_histograms_add_up() -> None:
    both = BUSY + IDLE
    assert both.slots == {1: 3, 3: 90, 11: 9, 17: 1} and both.count == 103
    assert both.total_ns == BUSY.total_ns + 3_000 and both.comm == "busy"


def test_hist_lines_are_runqlats_rows_the_longest_waiter_first() -> None:
    lines = list(hist_lines(cpuwait_stats(waits())))
    titles = [line for line in lines if line.startswith("cpu wait")]
    assert titles[0].startswith("cpu wait all processes: 103 waits")
    assert titles[1].startswith("cpu wait pid 10 busy: 100 waits, total 110ms")
    assert "\x1b" not in titles[2] and "idle\\x1b[31m" in titles[2]  # data, not escapes
    assert "usecs : count" in lines[2]
    assert any(line.strip().startswith("4 -> 7") and ": 90 " in line for line in lines)
    assert any(line.strip().startswith("65536 -> 131071") and ": 1 " in line for line in lines)


def test_hist_records_give_the_slots_as_inclusive_us_ranges() -> None:
    records = list(hist_records(cpuwait_stats(waits())))
    assert [r["pid"] for r in records] == [0, 10, 20]
    busy = records[1]
    assert busy["type"] == "cpuwait_hist" and busy["count"] == 100
    assert busy["total_wait_us"] == round(BUSY.total_ns / 1000, 1)
    assert busy["buckets_us"] == [[4, 7, 90], [1024, 2047, 9], [65536, 131071, 1]]
    assert records[2]["buckets_us"] == [[0, 1, 3]]


def test_summary_lines_and_record_say_what_was_lost() -> None:
    stats = cpuwait_stats(waits())
    lines = summary_lines(stats)
    assert lines[0].startswith("cpu wait all processes") and "busy" in lines[1]
    assert lines[-1] == "cpu wait: 2 waits not counted (the kernel's maps full)"
    record = cpuwait_summary(stats)
    assert record["count"] == 103 and record["lost"] == 2
    assert [r["pid"] for r in record["top"]] == [10, 20] and "buckets_us" not in record["top"][0]


def _text(table: object) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def test_the_dashboard_shows_a_p99_column_only_with_the_source() -> None:
    stats = TraceStats({}, 1, ["cpuwait"])
    stats.procs = {10: ["busy", 5, 0], 30: ["other", 1, 0]}
    assert CPU_WAIT not in _text(procs_table(stats, ViewState(), 5))
    stats.tick(cpuwait=waits())
    text = _text(procs_table(stats, ViewState(), 5))
    assert CPU_WAIT in text
    busy = next(line for line in text.splitlines() if "busy" in line)
    other = next(line for line in text.splitlines() if "other" in line)
    assert busy.split()[-1].endswith("ms") and other.split()[-1] == "-"


class _Value(ctypes.Structure):
    """A struct cpuwait_hist as BCC gives it (bpf/trace_cpuwait.c)."""

    _fields_ = [("slots", ctypes.c_uint64 * SLOTS), ("total_ns", ctypes.c_uint64),
                ("comm", ctypes.c_char * 16)]  # fmt: skip


@given(st.dictionaries(st.integers(0, SLOTS - 1), st.integers(1, 2**40), max_size=SLOTS))
def test_a_kernel_value_reads_as_its_histogram(slots: dict[int, int]) -> None:
    v = _Value()
    for s, n in slots.items():
        v.slots[s] = n
    v.total_ns, v.comm = 12345, b"worker"
    h = hist_of(bytes(v))  # the struct's bytes, as the table gives them
    assert HIST_DTYPE.itemsize == ctypes.sizeof(_Value)
    assert h == WaitHist(slots, sum(slots.values()), 12345, "worker")
