"""Aggregation of trace records: counts, rates, top lists, p99 from log2 histograms."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from ringtool.event.layout import load_layout
from ringtool.trace.report.log_slots import percentile_from_log2
from ringtool.trace.report.stats import DROP_LOG, TraceStats
from ringtool.trace.report.stats_json import stats_record, summary_record
from tests.helpers.net_records import net_records, net_sample
from tests.helpers.records import header_records


def test_percentile_empty_and_single_bucket() -> None:
    assert percentile_from_log2({}) == 0.0
    # slot 11 holds [1024, 2048) ns; 100 samples: the 99th is 99% into the bucket
    assert percentile_from_log2({11: 100}) == pytest.approx(1024 + 1024 * 0.99)


def test_percentile_picks_the_tail_bucket() -> None:
    hist = {5: 980, 20: 20}  # 98% fast, 2% in [2**19, 2**20)
    p99 = percentile_from_log2(hist)
    assert 2**19 <= p99 < 2**20
    assert percentile_from_log2(hist, 0.5) < 2**5
    assert percentile_from_log2({5: 990, 20: 10}) <= 2**5  # the 99th is still fast


def _batch(rows: list[tuple[str, int, int, bytes]]) -> np.ndarray:
    """Records ``(type, cpu, pid, comm)``."""
    keys = ("type", "cpu", "pid", "comm")
    return header_records([dict(zip(keys, row, strict=True)) for row in rows])


def test_counts_rates_top_and_summary() -> None:
    lay = load_layout()
    st = TraceStats(lay.type_names, 2, ["exec", "open"], start=100.0)
    st.add_batch(_batch([("open", 0, 10, b"a"), ("open", 1, 10, b"a"), ("exec", 1, 11, b"b")]))
    st.add_net(net_records([net_sample(cpu=0, pid=0, comm=b"")]))
    st.observe_fill({0: 0.5, 1: 0.1})
    st.observe_fill({0: 0.2})
    st.tick(drops_cpu=[3, 4], drops_source={"open": [3, 4]}, lost_cpu={0: 2}, now=102.0,
            syscall_hist={0: {10: 4}, 1: {12: 1}})  # fmt: skip
    assert st.total == 4
    assert st.by_type == {"open": 2, "exec": 1, "net": 1}
    assert st.per_cpu == [2, 2]
    assert st.rate_total == 2.0
    assert st.rate_source["open"] == 1.0 and st.rate_source["net"] == 0.5
    assert st.fill_cpu == {0: 0.5, 1: 0.1}
    assert st.top_procs(1) == [(10, "a", 2, 2)]
    assert [r.nr for r in st.top_syscalls(5)] == [0, 1]
    assert st.top_syscalls(1, "p99")[0].nr == 1
    summary = summary_record(st)
    assert summary["events"] == 4 and summary["dropped"] == 7 and summary["lost"] == 2
    assert summary["dropped_by_source"] == {"open": 7}
    assert summary["dropped_by_source_per_cpu"] == {"open": [3, 4]}
    st.tick(now=104.0)
    assert st.rate_total == 0.0 and st.fill_cpu == {}
    assert st.top_procs(1) == [(10, "a", 2, 0)]
    rec = stats_record(st)
    assert rec["type"] == "stats" and len(rec["per_cpu"]) == 2


def test_short_net_samples_are_counted_not_dropped_silently() -> None:
    from ringtool.event.decode import Decoder
    from ringtool.trace.writers.output_columns import format_summary

    lay = load_layout()
    dec = Decoder(lay)
    whole = bytes(lay.net.itemsize)
    events = dec.net_records([(0, b"\x01" * 7), (1, whole), (0, b"")])
    assert len(events) == 1 and dec.malformed == 2
    st = TraceStats(lay.type_names, 2, ["net"])
    st.add_net(events)
    st.malformed = dec.malformed
    assert summary_record(st)["malformed"] == 2
    assert stats_record(st)["malformed"] == 2
    assert format_summary(st)[0].endswith(", 2 malformed")


def test_drops_are_logged_with_their_interval() -> None:
    lay = load_layout()
    st = TraceStats(lay.type_names, 2, ["open", "net"], start=100.0)
    st.tick(drops_cpu=[0, 0], lost_cpu={}, now=101.0)
    assert st.drop_log == deque() and st.dropped_interval == 0
    st.tick(drops_cpu=[5, 0], lost_cpu={1: 3}, now=102.0)
    assert (st.dropped_interval, st.lost_interval, st.drops_cpu_interval) == (5, 3, [5, 0])
    st.tick(drops_cpu=[5, 0], lost_cpu={1: 3}, now=103.0)  # no growth: nothing new
    assert (st.dropped_interval, st.lost_interval, st.drops_cpu_interval) == (0, 0, [0, 0])
    st.tick(drops_cpu=[5, 2], lost_cpu={1: 3}, now=104.5)
    marks = [(m.uptime_s, m.dropped, m.lost) for m in st.drop_log]
    assert marks == [(2.0, 5, 3), (4.5, 2, 0)]
    assert st.drop_intervals == 2
    rec = stats_record(st)
    assert (rec["uptime_s"], rec["dropped_interval"], rec["lost_interval"]) == (4.5, 2, 0)
    assert [c["drops_interval"] for c in rec["per_cpu"]] == [0, 2]
    summary = summary_record(st)
    assert [(m["uptime_s"], m["dropped"]) for m in summary["drops_at"]] == [(2.0, 5), (4.5, 2)]
    assert summary["drop_intervals"] == 2


def test_drop_log_is_bounded() -> None:
    lay = load_layout()
    st = TraceStats(lay.type_names, 1, ["open"], start=0.0)
    for i in range(1, DROP_LOG + 11):
        st.tick(drops_cpu=[i], now=float(i))
    assert len(st.drop_log) == DROP_LOG and st.drop_intervals == DROP_LOG + 10
    assert st.drop_log[0].uptime_s == 11.0  # the oldest forgotten first


def test_begin_forgets_fill_from_before_reading() -> None:
    """The rings filled while nobody read them (before the attach): not this run's fill."""
    lay = load_layout()
    st = TraceStats(lay.type_names, 2, ["open"], start=0.0)
    st.observe_fill({0: 0.978, 1: 0.9})
    st.begin(now=5.0)
    st.observe_fill({0: 0.01})
    st.tick(drops_cpu=[0, 0], now=6.0)
    assert st.fill_cpu == {0: 0.01}
    assert stats_record(st)["uptime_s"] == 1.0


def test_packets_count_under_their_connections_process() -> None:
    """Packets of a TCP connection carry its owner's pid and comm (as of when the tcp
    source took it): they count under that process, whose newer name (an exec since)
    stays; the others under pid 0, ``[net]``."""
    lay = load_layout()
    st = TraceStats(lay.type_names, 1, ["exec", "net"], start=0.0)
    st.add_batch(header_records([{"type": "exec", "pid": 7, "comm": b"nginx", "ts": 500}]))
    st.add_net(net_records([net_sample(pid=7, comm=b"starter", ts=400),
                            net_sample(pid=7, comm=b"starter", ts=450),
                            net_sample(pid=0, comm=b"", ts=460)]))  # fmt: skip
    assert sorted(st.proc_rows()) == [(0, "[net]", 1, 0), (7, "nginx", 3, 0)]
    st.add_net(net_records([net_sample(pid=9, comm=b"curl", ts=600)]))
    assert (9, "curl", 1, 0) in st.proc_rows()
