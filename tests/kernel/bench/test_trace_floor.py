"""``bench trace``'s ``trace-overhead`` row gives, from the same run, the floor of what
every event needs (``bench primitives``' clock and user-read blocks) and the default
trace's cost over the empty programs' against it: the fields are there and their
arithmetic holds (the times themselves are reported, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringtool.bench.trace import overhead
from ringtool.bench.trace_floor import BLOCK_SCALE, floor_fields, floor_ns
from ringtool.bench.trace_proc import build_loop

# host_only: as tests/kernel/bench/test_trace.py (timings in an emulated VM mean nothing)
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def test_floor_is_two_clock_reads_and_half_an_open_per_syscall() -> None:
    """0.75 × (2 clock reads + (path read + timestamp) / 2): the docs' 64 and 144 ns
    give their 174 ns."""
    assert BLOCK_SCALE == 0.75
    assert floor_ns(64.0, 144.0) == pytest.approx(174.0)
    fields = floor_fields({"ktime": 64.0, "user_str": 144.0}, 348.0)
    assert fields["floor_ns"] == 174.0 and fields["floor_ratio"] == 2.0
    assert floor_fields({"ktime": -1.0, "user_str": 0.0}, 300.0)["floor_ratio"] is None


def test_overhead_row_has_the_floor_of_the_same_run(tmp_path: Path) -> None:
    row = overhead(build_loop(tmp_path), 1.0, quick=True)
    for key in ("floor_ktime_ns", "floor_user_str_ns", "floor_ns", "traced_added_ns",
                "empty_added_ns", "above_empty_ns"):  # fmt: skip
        assert isinstance(row[key], float), (key, row)
    # the programs' work: the default trace's added ns over the empty programs'
    assert row["above_empty_ns"] == pytest.approx(
        row["traced_added_ns"] - row["empty_added_ns"], abs=0.2), row  # fmt: skip
    assert row["floor_scale"] == BLOCK_SCALE
    floor = BLOCK_SCALE * (2 * row["floor_ktime_ns"] + (row["floor_user_str_ns"]
                                                        + row["floor_ktime_ns"]) / 2)  # fmt: skip
    assert row["floor_ns"] == pytest.approx(floor, abs=0.2), row
    if row["floor_ns"] > 0:  # the blocks measured something: the ratio is the division
        assert row["floor_ratio"] == pytest.approx(row["above_empty_ns"] / row["floor_ns"],
                                                   abs=0.011), row  # fmt: skip
    else:
        assert row["floor_ratio"] is None, row
