"""Each process's network and disk bytes per interval (the dashboard's NET TX/RX and
DISK R/W), counted from hand-built record batches: tcp bytes at the close or from the
kernel's live counters, packets by direction, block requests by operation, per device
with a service p99 (no kernel)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.records import Records
from ringtool.event.tcp_data import address
from ringtool.trace.reading.latency_buckets import bucket_indexes, bucket_of, middle, quantile
from ringtool.trace.report.proc_io import CONNS_KEPT, DISK_KEYS, ProcIO
from tests.helpers.io_records import LAYOUT, disk_records, tcp_records
from tests.helpers.net_records import net_records, net_sample
from tests.helpers.stats import open_batch

LOOP0 = 7 << 20  # the kernel's dev_t of 7:0
SDA = 8 << 20


def _io(*sources: str) -> ProcIO:
    io = ProcIO(LAYOUT, sources)
    io.tick(0.0)  # the first tick: no rate yet
    return io


def test_tcp_bytes_at_the_close_to_the_owner_per_interval() -> None:
    io = _io("tcp")
    batch = np.concatenate((
        tcp_records([{"pid": 10, "tx_bytes": 3_001, "rx_bytes": 10_001},
                     {"pid": 11, "tx_bytes": 10_002, "rx_bytes": 3_001},
                     {"pid": 10, "tx_bytes": 999, "rx_bytes": 1}]),
        open_batch(np.array([10, 12]), b"other"),  # not tcp: not counted
    ))  # fmt: skip
    io.add_batch(batch)
    frame = io.tick(2.0)  # a 2 s interval
    assert frame.net and not frame.disk and not frame.live
    assert frame.rates[10] == (2_000.0, 5_001.0, 0.0, 0.0)
    assert frame.rates[11] == (5_001.0, 1_500.5, 0.0, 0.0)
    assert 12 not in frame.rates
    assert io.tick(3.0).rates[10] == (0.0, 0.0, 0.0, 0.0)  # nothing in the next one


def test_live_counters_win_over_the_close_and_restart_when_forgotten() -> None:
    io = _io("tcp")
    io.tick(1.0, {10: (1_000, 50)})
    io.add_batch(tcp_records([{"pid": 10, "tx_bytes": 5_000, "rx_bytes": 5_000}]))
    frame = io.tick(2.0, {10: (4_000, 150)})  # the close's bytes are in the counters
    assert frame.live and frame.rates[10] == (3_000.0, 100.0, 0.0, 0.0)
    frame = io.tick(3.0, {10: (200, 0)})  # the LRU map forgot it: counted afresh
    assert frame.rates[10] == (200.0, 0.0, 0.0, 0.0)


def test_disk_reads_and_writes_by_operation() -> None:
    io = _io("disk")
    io.add_batch(disk_records([
        {"pid": 20, "rwbs": b"WS", "bytes": 65_536, "dev": LOOP0, "service_ns": 40_000},
        {"pid": 20, "rwbs": b"FWS", "bytes": 4_096, "dev": LOOP0, "service_ns": 90_000},
        {"pid": 20, "rwbs": b"R", "bytes": 16_384, "dev": SDA, "service_ns": 1_000_000},
        {"pid": 20, "rwbs": b"F", "bytes": 0, "dev": LOOP0, "service_ns": 5_000},
        {"pid": 21, "rwbs": b"RA", "bytes": 8_192, "dev": LOOP0, "service_ns": 10},
        {"pid": 21, "rwbs": b"D", "bytes": 1 << 20, "dev": LOOP0, "service_ns": 10},
    ]))  # fmt: skip
    frame = io.tick(1.0)
    assert not frame.net and frame.disk
    assert frame.rates[20] == (0.0, 0.0, 16_384.0, 69_632.0)
    assert frame.rates[21] == (0.0, 0.0, 8_192.0, 0.0)  # a discard: a request, no bytes
    rows = io.disk_rows({20})
    assert [(r.dev, r.requests, r.read, r.written) for r in rows] == [
        (LOOP0, 3, 0, 69_632), (SDA, 1, 16_384, 0)]  # fmt: skip
    assert rows[0].p99_ns == middle(bucket_of(90_000))
    both = io.disk_rows({20, 21})  # by name: the devices added up
    assert (both[0].dev, both[0].requests, both[0].read) == (LOOP0, 5, 8_192)
    assert both[0].p99_ns == middle(bucket_of(90_000))


def test_disk_histograms_for_the_first_pairs_only() -> None:
    io = _io("disk")
    io.add_batch(disk_records([{"pid": 1000 + i, "rwbs": b"W", "bytes": 512, "dev": LOOP0,
                                "service_ns": 7_000} for i in range(DISK_KEYS + 1)]))  # fmt: skip
    io.add_batch(disk_records([{"pid": 1000, "rwbs": b"W", "dev": LOOP0,
                                "service_ns": 10**12}]))  # over 69 s: the last bucket  # fmt: skip
    first, last = io.disk_rows({1000}), io.disk_rows({1000 + DISK_KEYS})
    assert first[0].requests == 2 and first[0].p99_ns > 60e9
    assert last[0].requests == 1 and math.isnan(last[0].p99_ns)  # counted, no histogram


def test_packets_by_direction_only_without_the_tcp_source() -> None:
    packets = net_records([net_sample(pid=30, len=1_500, dir="egress"),
                           net_sample(pid=30, len=60, dir="ingress"),
                           net_sample(pid=0, len=100, dir="ingress")])  # fmt: skip
    records = Records(np.zeros(0, LAYOUT.event), packets)
    io = _io("net")
    io.add(records)
    frame = io.tick(1.0)
    assert frame.rates[30] == (1_500.0, 60.0, 0.0, 0.0)
    assert frame.rates[0] == (0.0, 100.0, 0.0, 0.0)  # packets of no process: [net]
    io = _io("net", "tcp")  # the tcp source's counts, not the packets twice
    io.add(records)
    assert io.tick(1.0).rates == {}


def test_closed_connections_newest_first_of_the_pids_kept_bounded() -> None:
    io = _io("tcp")
    n = CONNS_KEPT // 2 + 10
    rows = [{"pid": 40 + i % 2, "dport": i % 60_000, "ts": 10 + i, "daddr": "10.0.0.1",
             "tx_bytes": i} for i in range(2 * n)]  # fmt: skip
    io.add_batch(tcp_records(rows))
    io.add_batch(tcp_records([{"pid": 41, "dport": 9, "ts": 10**9}]))  # a later batch
    assert len(io.conns) == CONNS_KEPT  # the oldest 21 left
    mine = io.closed({41})
    assert len(mine) == n - 10 + 1 and set(mine["pid"].tolist()) == {41}
    assert mine["dport"].tolist()[:2] == [9, (2 * n - 1) % 60_000]
    assert mine["tx_bytes"].tolist()[1:3] == [2 * n - 1, 2 * n - 3]
    assert address(bytes(mine["daddr"][1])) == "10.0.0.1"
    both = io.closed({40, 41})  # by name: every one's, by time
    assert both["ts"].tolist() == sorted(both["ts"].tolist(), reverse=True)
    assert len(both) == CONNS_KEPT and len(io.closed({42})) == 0
    assert len(ProcIO(LAYOUT, ("tcp",)).closed({41})) == 0


@given(st.lists(st.integers(0, 2**53 - 1), max_size=50))
def test_bucket_indexes_are_bucket_of(values: list[int]) -> None:
    got = bucket_indexes(np.array(values, dtype=np.int64)).tolist()
    assert got == [bucket_of(v) for v in values]
    if values:
        assert quantile({b: 1 for b in got}, 1.0) == middle(bucket_of(max(values)))


def test_paused_frames_draw_a_copy_that_counting_leaves_alone() -> None:
    io = _io("tcp", "disk")
    io.add_batch(np.concatenate((tcp_records([{"pid": 50, "tx_bytes": 10}]),
                                 disk_records([{"pid": 50, "rwbs": b"W", "bytes": 512,
                                                "dev": LOOP0}]))))  # fmt: skip
    io.tick(1.0)
    shown = io.shown(True)
    assert shown is not io and io.shown(True) is shown  # taken once per pause
    io.add_batch(np.concatenate((tcp_records([{"pid": 50, "tx_bytes": 10}]),
                                 disk_records([{"pid": 50, "rwbs": b"W", "bytes": 512,
                                                "dev": LOOP0}]))))  # fmt: skip
    io.tick(2.0)
    assert shown.frame.rates[50] == (10.0, 0.0, 0.0, 512.0) == io.frame.rates[50]
    assert len(shown.closed({50})) == 1 and len(io.closed({50})) == 2
    assert shown.disk_rows({50})[0].requests == 1 and io.disk_rows({50})[0].requests == 2
    assert io.shown(False) is io and io.shown(True) is not shown  # a new pause, a new copy
