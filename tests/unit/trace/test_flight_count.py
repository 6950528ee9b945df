"""The arithmetic of a flight recorder's overwritten events, on hand-built counts:
exact where the kernel's counts allow it, else a lower bound named ``overwritten_min``
in the JSON and ``at least`` in the text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.trace.reading.flight_count import Overwritten, perf_overwritten, ringbuf_overwritten
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import stats_record, summary_record
from ringtool.trace.writers.output_columns import format_stats, format_summary


def test_perf_outputs_less_written_less_damaged_per_cpu() -> None:
    ow = perf_overwritten([10, 4, 0], {0: 3, 1: 4}, {0: 1}, exact=True)
    assert (ow.per_cpu, ow.total, ow.damaged, ow.key) == ({0: 6}, 6, 1, "overwritten")
    assert ow.record() == {"overwritten": 6, "overwritten_per_cpu": {"0": 6}, "damaged": 1}


def test_perf_a_cpu_that_wrote_more_than_its_counter_said_is_zero_not_negative() -> None:
    # records written after the counters were read (the sources ran on): a lower bound
    ow = perf_overwritten([2, 5], {0: 4, 1: 1}, {}, exact=False)
    assert (ow.per_cpu, ow.total, ow.key) == ({1: 4}, 4, "overwritten_min")
    assert ow.record() == {"overwritten_min": 4, "overwritten_min_per_cpu": {"1": 4}}


@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10)),
             max_size=8),
    st.lists(st.integers(0, 10**6), max_size=8),
)  # fmt: skip
def test_perf_the_count_never_exceeds_the_truth(
    cpus: list[tuple[int, int, int]], late: list[int]
) -> None:
    """Per CPU: ``true`` overwritten, ``kept`` written, ``bad`` damaged; ``late`` more
    records written after the counters were read (in the copy, not counted)."""
    late = late + [0] * (len(cpus) - len(late))
    outputs = [t + k + b for t, k, b in cpus]
    written = {cpu: k + late[cpu] for cpu, (_t, k, _b) in enumerate(cpus)}
    damaged = {cpu: b for cpu, (_t, _k, b) in enumerate(cpus)}
    ow = perf_overwritten(outputs, written, damaged, exact=not any(late))
    assert ow.total <= sum(t for t, _k, _b in cpus)
    if ow.exact:
        assert ow.total == sum(t for t, _k, _b in cpus)


def test_ringbuf_counted_records_plus_a_lower_bound_of_the_uncounted_bytes() -> None:
    exact = ringbuf_overwritten(7, 0, 48, exact=True)
    assert (exact.total, exact.key) == (7, "overwritten")
    bound = ringbuf_overwritten(7, 100, 48, exact=True)  # 100 bytes: at least 2 records
    assert (bound.total, bound.key) == (9, "overwritten_min")
    assert ringbuf_overwritten(7, 0, 48, exact=False).key == "overwritten_min"
    with pytest.raises(ValueError, match="record_span"):
        ringbuf_overwritten(0, 10, 0, exact=True)


def _stats(ow: Overwritten | None) -> TraceStats:
    stats = TraceStats({1: "open"}, 2, ["open"])
    stats.tick(drops_cpu=[2, 0], lost_cpu={}, overwritten=ow, now=stats.start + 1)
    return stats


def test_the_summary_and_the_stats_line_show_it_beside_dropped_and_lost() -> None:
    exact = _stats(perf_overwritten([9, 0], {0: 4}, {}, exact=True))
    assert summary_record(exact)["overwritten"] == 5
    assert summary_record(exact)["overwritten_per_cpu"] == {"0": 5}
    assert "5 overwritten" in format_summary(exact, None)[0]
    bound = _stats(ringbuf_overwritten(3, 96, 48, exact=False))
    assert summary_record(bound)["overwritten_min"] == 5
    assert "overwritten" not in summary_record(bound)
    assert stats_record(bound)["overwritten_min"] == 5
    assert "at least 5 overwritten" in format_summary(bound, None)[0]
    assert format_stats(bound, None).endswith("drops 2 lost 0 overwritten_min 5")


def test_a_run_that_is_no_flight_recorder_has_no_such_field() -> None:
    stats = _stats(None)
    assert not any(k.startswith("overwritten") for k in summary_record(stats))
    assert not any(k.startswith("overwritten") for k in stats_record(stats))
    assert "overwritten" not in format_summary(stats, None)[0]
