"""PerfBuffer against real PERF_EVENT_ARRAY maps filled by real BPF programs."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

import ringtool
from ringtool.errors import ConsumerStateError, MapTypeError, RingSizeError
from ringtool.kernel import bpf
from ringtool.kernel.cpus import online_cpus
from tests.helpers.producers import PERF_EVENT, PERF_MAGIC, PerfProducer, decode

pytestmark = pytest.mark.kernel

EVENT, MAGIC = PERF_EVENT, PERF_MAGIC


def test_per_cpu_delivery(perf_producer: PerfProducer) -> None:
    cpus = online_cpus()
    with ringtool.PerfBuffer(perf_producer.events, None) as pb:
        assert [b.cpu for b in pb.buffers] == cpus and pb.buffer_cnt() == len(cpus)
        for cpu in cpus:
            perf_producer.emit(200 + cpu, cpu)
        recs = list(pb.read(timeout_ms=0))
    for cpu in cpus:
        mine = [decode(r.data) for r in recs if r.cpu == cpu]
        assert [s for s, _, _ in mine] == list(range(1, 201 + cpu))
        assert {c for _, c, _ in mine} == {cpu} and {m for _, _, m in mine} == {MAGIC}
    assert all(len(r.data) == 20 for r in recs)  # 16-byte event, padded by the kernel


def test_poll_callback_and_buffer_index_vs_cpu(perf_producer: PerfProducer) -> None:
    cpu = online_cpus()[-1]
    got: list[tuple[int, int]] = []
    with ringtool.PerfBuffer(
        perf_producer.events, lambda c, d: got.append((c, decode(d)[1])), cpus=[cpu]
    ) as pb:
        assert pb.buffer_cnt() == 1 and pb.buffers[0].cpu == cpu and pb.buffers[0].index == 0
        assert pb.buffer_fd(0) > 0 and pb.epoll_fd() > 0
        t = threading.Timer(0.05, perf_producer.emit, (10, cpu))
        t.start()
        n = 0
        deadline = time.monotonic() + 5
        while n < 10 and time.monotonic() < deadline:
            n += pb.poll(1000)
        t.join()
        assert n == 10 and got == [(cpu, cpu)] * 10
        perf_producer.emit(5, cpu)
        assert pb.consume_buffer(0) == 5
        with pytest.raises(IndexError):
            pb.consume_buffer(1)


def test_overrun_one_page_exact_accounting(perf_producer: PerfProducer) -> None:
    lost_calls: list[tuple[int, int]] = []
    seqs: list[int] = []
    with ringtool.PerfBuffer(
        perf_producer.events,
        lambda c, d: seqs.append(decode(d)[0]),
        lambda c, n: lost_calls.append((c, n)),
        page_cnt=1,
        cpus=[0],
    ) as pb:
        perf_producer.emit(1000, 0)
        first = pb.consume()
        assert 0 < first < 1000
        failed = perf_producer.failed(0)
        assert first + failed == 1000
        # The kernel emits PERF_RECORD_LOST only at the next output that finds space.
        assert pb.lost() == {0: 0} and lost_calls == []
        perf_producer.emit(1, 0)
        assert pb.consume() == 1
        assert pb.lost() == {0: failed} and lost_calls == [(0, failed)]
        assert len(seqs) + pb.lost()[0] == perf_producer.produced(0) == 1001
        assert seqs == [*range(1, first + 1), 1001]
        assert pb.unknown() == {0: 0}


def test_cpus_subset_only(perf_producer: PerfProducer) -> None:
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0]) as pb:
        assert [b.cpu for b in pb.buffers] == [0]
        if 1 in online_cpus():
            perf_producer.emit(7, 1)  # no buffer for CPU 1: the output fails in the kernel
            assert perf_producer.failed(1) == 7
        perf_producer.emit(3, 0)
        assert [r.cpu for r in pb.read(timeout_ms=0)] == [0, 0, 0]


def test_styles_lease_batch_iter_across_the_wrap() -> None:
    perf_producer = PerfProducer(pad_words=1)  # 40-byte records: some wrap the 16 KiB ring
    pb = ringtool.PerfBuffer(perf_producer.events, None, cpus=[0], page_cnt=4)
    seq = 0
    for _ in range(4):
        perf_producer.emit(100, 0)
        with pb.lease() as views:
            assert [decode(v)[0] for v in views] == list(range(seq + 1, seq + 101))
            assert {len(v) for v in views} == {28}
        perf_producer.emit(400, 0)
        arr = pb.read_batch(EVENT)
        assert arr["seq"].tolist() == list(range(seq + 101, seq + 501))
        assert set(arr["magic"]) == {MAGIC}
        perf_producer.emit(300, 0)
        got = [decode(r.data)[0] for r in pb.read(timeout_ms=0)]
        assert got == list(range(seq + 501, seq + 801))
        seq += 800
    assert pb.lost() == {0: 0} and perf_producer.failed(0) == 0
    pb.close()
    perf_producer.close()
    assert pb.closed
    with pytest.raises(ConsumerStateError):
        pb.consume()


def test_close_removes_fds_from_map(perf_producer: PerfProducer) -> None:
    pb = ringtool.PerfBuffer(perf_producer.events, None, cpus=[0])
    perf_producer.emit(2, 0)
    assert perf_producer.failed(0) == 0
    pb.close()
    perf_producer.emit(2, 0)
    assert perf_producer.failed(0) == 2  # slot deleted: bpf_perf_event_output gets -ENOENT


def test_watermark_wakes_only_when_reached(perf_producer: PerfProducer) -> None:
    got: list[int] = []
    with ringtool.PerfBuffer(
        perf_producer.events, lambda c, d: got.append(1), cpus=[0], watermark_bytes=2048
    ) as pb:
        perf_producer.emit(10, 0)  # 320 bytes: below the watermark, epoll stays quiet
        assert pb.poll(50) == 0 and got == []
        perf_producer.emit(100, 0)  # 3520 bytes: past it
        assert pb.poll(1000) == 110
    with pytest.raises(RingSizeError):
        ringtool.PerfBuffer(perf_producer.events, None, page_cnt=1, watermark_bytes=8192)


def test_auto_callback(perf_producer: PerfProducer) -> None:
    got: list[int] = []
    done = threading.Event()

    def cb(cpu: int, data: memoryview) -> None:
        got.append(decode(data)[0])
        if len(got) == 50:
            done.set()

    with ringtool.PerfBuffer(perf_producer.events, cb, cpus=[0], auto_callback=True) as pb:
        perf_producer.emit(50, 0)
        assert done.wait(5)
        with pytest.raises(ConsumerStateError):
            pb.poll(0)
    assert got == list(range(1, 51))


def test_overwrite_snapshot_returns_newest(perf_producer: PerfProducer) -> None:
    with ringtool.PerfBuffer(
        perf_producer.events, None, cpus=[0], page_cnt=1, overwrite=True
    ) as pb:
        perf_producer.emit(10, 0)
        snap = pb.snapshot()[0]
        assert [decode(d)[0] for d in snap] == list(range(1, 11))
        perf_producer.emit(990, 0)
        seqs = [decode(d)[0] for d in pb.snapshot()[0]]
        assert seqs == list(range(1001 - len(seqs), 1001)) and 120 <= len(seqs) <= 128
        assert perf_producer.failed(0) == 0  # overwrite mode never refuses an output
        with pytest.raises(ConsumerStateError):
            pb.consume()


def test_wrong_map_type_and_bad_arguments(perf_producer: PerfProducer) -> None:
    fd = bpf.map_create(bpf.MapType.HASH, key_size=4, value_size=4, max_entries=4)
    try:
        with pytest.raises(MapTypeError, match="PERF_EVENT_ARRAY"):
            ringtool.PerfBuffer(fd, None)
    finally:
        os.close(fd)
    for bad in (0, 3, 12):
        with pytest.raises(RingSizeError):
            ringtool.PerfBuffer(perf_producer.events, None, page_cnt=bad)
    # absent / offline CPUs are skipped without error
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0, 1, 2, 3, 4096]) as pb:
        assert [b.cpu for b in pb.buffers] == [c for c in online_cpus() if c < 4]
    with pytest.raises(ValueError, match="no online CPU"):
        ringtool.PerfBuffer(perf_producer.events, None, cpus=[4096])
    small = bpf.map_create(bpf.MapType.PERF_EVENT_ARRAY, key_size=4, value_size=4, max_entries=1)
    try:
        with ringtool.PerfBuffer(small, None) as pb:  # default: CPUs beyond the map skipped
            assert [b.cpu for b in pb.buffers] == [0]
        if 1 in online_cpus():
            with pytest.raises(ValueError, match="max_entries"):
                ringtool.PerfBuffer(small, None, cpus=[0, 1])
    finally:
        os.close(small)


def test_payload_capture_over_veth() -> None:
    from ringtool.programs.netcapture import NetCapture, parse

    frames = [
        b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes([i]) * (40 + 97 * i)
        for i in range(5)
    ]
    captured = []
    with NetCapture() as cap:
        with ringtool.PerfBuffer(cap.events, lambda c, d: captured.append(parse(d))) as pb:
            for f in frames:
                cap.send_frame(f)
            deadline = time.monotonic() + 5
            ours: list[Any] = []
            while len(ours) < len(frames) and time.monotonic() < deadline:
                pb.poll(200)
                # The kernel's own traffic on a fresh link (IPv6 MLD/ND) is captured
                # too: keep the frames of this test's ethertype.
                ours = [g for g in captured if g.payload[12:14] == b"\x88\xb5"]
        got = sorted(ours, key=lambda g: g.ts_ns)  # frames may be received on either CPU
        assert [g.payload for g in got] == frames
        assert [g.pkt_len for g in got] == [len(f) for f in frames]
        assert {g.ifindex for g in got} == {cap.peer_index}


def test_bench_quick_smoke() -> None:
    from ringtool.bench import perfbuf as bench

    rows = bench.run(repeats=1, quick=True)
    assert [r["consumer"] for r in rows] == list(bench.CONSUMERS)
    for r in rows:  # setup installs gcc and libbpf-dev: no row is skipped
        assert r["bench"] == "perfbuf-drain" and r["ns_per_record"] > 0, r
        assert r["records"] == rows[0]["records"] > 0 and r["ratio_libbpf"] > 0
    by = {r["consumer"]: r for r in rows}
    assert by["bcc"]["ratio"] == 1.0 and by["libbpf-c"]["ratio_libbpf"] == 1.0


def test_netcapture_cleans_up_on_error() -> None:
    from pyroute2 import IPRoute, netns

    from ringtool.programs.netcapture import NetCapture, NetCaptureError

    class Failing(NetCapture):
        def _setup(self) -> None:
            super()._setup()  # everything is attached ...
            raise RuntimeError("boom")  # ... then something fails

    cap = Failing()
    with pytest.raises(NetCaptureError, match="boom"):
        cap.__enter__()
    assert cap.netns not in netns.listnetns()
    with IPRoute() as ipr:
        assert ipr.link_lookup(ifname=cap.host_if) == []
    with NetCapture() as ok:
        name, host = ok.netns, ok.host_if
        assert name in netns.listnetns()
    assert name not in netns.listnetns()
    with IPRoute() as ipr:
        assert ipr.link_lookup(ifname=host) == []
