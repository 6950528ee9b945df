"""CPU hotplug: the watcher, PerfBuffer / RingBufGroup following CPUs, the invariant.

Host tests never take a CPU offline (other work shares this machine's CPUs): they
give the watcher a fake online list, or add a CPU that was left out at start. The
tests marked ``hotplug`` write ``/sys/devices/system/cpu/cpu1/online`` and run only
where ``RINGTOOL_VM=1`` says the machine is the throwaway test VM (``make test-vm``).

Invariant checked everywhere, per CPU: every event the BPF program numbered was
delivered exactly once or counted by the program as a failed output (the producers
count what the kernel refused: ring full, a detached perf event, a CPU with no ring).
"""

from __future__ import annotations

import struct
import threading
from contextlib import closing
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

import ringtool
from ringtool.errors import ArgumentError, PerfEventOpenError
from ringtool.kernel import bpf, cpus
from ringtool.kernel.hotplug import NO_CHANGE, OnlineWatcher
from ringtool.readers.ringbuf_group import RingBufGroup
from tests.helpers.hotplug import needs_two, set_cpu1, vm_only
from tests.helpers.producers import GroupProducer, PerfProducer, decode

pytestmark = pytest.mark.kernel


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeOnline:
    """An online list the test changes; counts reads."""

    def __init__(self, cpus: list[int]) -> None:
        self.cpus = cpus
        self.reads = 0

    def __call__(self) -> list[int]:
        self.reads += 1
        if self.cpus is None:
            raise OSError("unreadable")
        return list(self.cpus)


# --- the watcher (no kernel needed) -------------------------------------------------


def test_watcher_reads_at_most_once_per_interval() -> None:
    clock, online = FakeClock(), FakeOnline([0, 1])
    w = OnlineWatcher([0, 1], read=online, clock=clock)
    online.cpus = [0]
    for _ in range(1000):  # a busy read loop within one second: no sysfs read
        assert w.check() == NO_CHANGE
        clock.now += 0.0009
    assert online.reads == 0 and w.online == {0, 1}
    clock.now = 1.0
    change = w.check()
    assert (change.offline, change.online, online.reads) == ((1,), (), 1)
    assert w.check() == NO_CHANGE and online.reads == 1  # cached again
    online.cpus = [0, 1, 2]
    assert w.check(force=True).online == (1, 2) and online.reads == 2


def test_watcher_unreadable_list_is_no_change() -> None:
    clock, online = FakeClock(), FakeOnline([0])
    w = OnlineWatcher(read=online, clock=clock)  # initial: read now
    online.cpus = None  # type: ignore[assignment]
    clock.now = 5.0
    assert not w.check() and w.online == {0}


def test_possible_cpus_read_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 14: counter reads (percpu_u64, RingBuffer.dropped) re-read
    /sys/devices/system/cpu/possible every time; now it is read once per process."""
    n = cpus.possible_cpu_count()
    monkeypatch.setattr(cpus, "_SYS_CPU", tmp_path)  # an empty dir: any read fails
    assert cpus.possible_cpu_count() == n and len(cpus.possible_cpus()) >= 1
    fd = bpf.map_create(bpf.MapType.PERCPU_ARRAY, key_size=4, value_size=8, max_entries=1)
    try:
        assert bpf.percpu_u64(fd) == [0] * n
    finally:
        bpf.close_fd(fd)


# --- PerfBuffer ---------------------------------------------------------------------


# While a Flow runs, each drain reads at most FLOW_READ records: read() goes on until a
# wait finds nothing, so a producer faster than the reading loop (the VM's emulated
# CPUs, one host thread for both) kept one drain reading for ever. Leaving read()
# early commits exactly the records yielded; the rest come in the next drain.
FLOW_READ = 2000


def _delivered(pb: ringtool.PerfBuffer, limit: int | None = None) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    with closing(pb.read(timeout_ms=0)) as recs:
        for rec in islice(recs, limit):
            seq, ev_cpu, _ = decode(rec.data)
            assert rec.cpu == ev_cpu
            out.setdefault(ev_cpu, []).append(seq)
    return out


def _check_invariant(
    perf_producer: PerfProducer, got: dict[int, list[int]], cpus_: list[int]
) -> None:
    for cpu in cpus_:
        seqs = got.get(cpu, [])
        assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs), f"cpu {cpu}: dup/reorder"
        assert len(seqs) + perf_producer.failed(cpu) == perf_producer.produced(cpu), f"cpu {cpu}"


@needs_two
def test_perf_add_cpu_left_out_at_start(perf_producer: PerfProducer) -> None:
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0]) as pb:
        perf_producer.emit(30, 1)  # no fd in the map at index 1: refused, counted
        assert perf_producer.failed(1) == 30
        buf = pb.add_cpu(1)
        assert buf.cpu == 1 and [b.cpu for b in pb.buffers] == [0, 1]
        perf_producer.emit(40, 1)
        perf_producer.emit(10, 0)
        got = _delivered(pb)
        assert got[1] == list(range(31, 71)) and got[0] == list(range(1, 11))
        _check_invariant(perf_producer, got, [0, 1])
        with pytest.raises(ArgumentError, match="already has a perf buffer"):
            pb.add_cpu(1)
        with pytest.raises(ArgumentError, match="max_entries"):
            pb.add_cpu(1 << 20)


@needs_two
def test_perf_follows_fake_hotplug(perf_producer: PerfProducer) -> None:
    """CPU 1 'goes offline' then 'comes online' (a fake list): the first buffer is
    still drained, a second one is opened and stored in the map, one line each."""
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=None) as pb:
        online = FakeOnline([0, 1])
        pb.cpu_watcher = OnlineWatcher([0, 1], read=online)
        perf_producer.emit(25, 1)
        online.cpus = [0]
        notes = pb.check_cpus(force=True)
        assert notes == ["cpu 1 went offline: its perf buffer stays open and is drained "
                         "(800 bytes pending)"]  # fmt: skip
        online.cpus = [0, 1]
        notes = pb.check_cpus(force=True)
        assert notes == ["cpu 1 came online: opened a perf buffer for it (the previous "
                         "one is kept until drained)"]  # fmt: skip
        assert [b.cpu for b in pb.buffers].count(1) == 2
        perf_producer.emit(35, 1)  # into the new buffer
        got = _delivered(pb)
        assert got[1] == list(range(1, 61))
        _check_invariant(perf_producer, got, [0, 1])
        assert pb.check_cpus() == []  # within the interval: no read, nothing new


@pytest.mark.hotplug
@vm_only
def test_vm_perf_add_offline_cpu_is_a_clear_error(
    perf_producer: PerfProducer, cpu1_restored: None
) -> None:
    set_cpu1(False)
    with ringtool.PerfBuffer(perf_producer.events, None) as pb:
        assert [b.cpu for b in pb.buffers] == [0]  # offline CPUs are skipped
        with pytest.raises(PerfEventOpenError, match="offline"):
            pb.add_cpu(1)


# --- RingBufGroup -------------------------------------------------------------------


def _group_delivered(rb: ringtool.RingBuffer, limit: int | None = None) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    with closing(rb.read(timeout_ms=0)) as recs:
        for rec in islice(recs, limit):
            _ts, seq, cpu, _magic = struct.unpack_from("<QQII", rec.data)
            out.setdefault(cpu, []).append(seq)
    return out


@needs_two
def test_group_opens_ring_for_cpu_without_one() -> None:
    with RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16, cpus=[0]) as group:
        prod = GroupProducer(group)
        rb = group.consumer()
        try:
            prod.emit(20, 1)  # no buffer for cpu 1: dropped and counted
            assert group.dropped()[1] == 20
            online = FakeOnline([0])
            group.cpu_watcher = OnlineWatcher([0], read=online)
            online.cpus = [0, 1]
            assert group.check_cpus(force=True) == []  # cpus=[0]: 1 is not followed
            assert group.add_cpu(1) == 1 and rb.ring_cnt == 2
            assert group.layout.cpus_of(1) == [1]
            prod.emit(30, 1)
            got = _group_delivered(rb)
            assert got[1] == list(range(21, 51))
            assert len(got[1]) + group.dropped()[1] == prod.produced(1)
            with pytest.raises(ArgumentError, match="already writes"):
                group.add_cpu(1)
        finally:
            rb.close()
            prod.close()


@needs_two
def test_group_notes_for_fake_hotplug() -> None:
    with RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16) as group:
        online = FakeOnline([0, 1])
        group.cpu_watcher = OnlineWatcher([0, 1], read=online)
        online.cpus = [0]
        assert group.check_cpus(force=True) == [
            "cpu 1 went offline: its ring buffer 1 is read until empty"
        ]
        online.cpus = [0, 1]
        assert group.check_cpus(force=True) == [
            "cpu 1 came online: it writes to its ring buffer 1 again"
        ]


# --- real hotplug, in the VM only ---------------------------------------------------


class Flow:
    """Emits on CPU 0 and (when it is online) CPU 1 from a thread until stopped."""

    def __init__(self, emit: Any) -> None:
        self.emit = emit
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for cpu in (0, 1):
                try:
                    self.emit(50, cpu)
                except OSError:  # EINVAL: pinning to an offline CPU
                    pass
                except BaseException as exc:
                    self.errors.append(exc)
                    return

    def end(self) -> None:
        self.stop.set()
        self.thread.join()
        assert not self.errors


@pytest.mark.hotplug
@vm_only
def test_vm_perf_cpu1_offline_online_while_events_flow(
    perf_producer: PerfProducer, cpu1_restored: None
) -> None:
    got: dict[int, list[int]] = {}
    notes: list[str] = []

    def drain(pb: ringtool.PerfBuffer, limit: int | None = FLOW_READ) -> None:
        notes.extend(pb.check_cpus(force=True))
        for cpu, seqs in _delivered(pb, limit).items():
            got.setdefault(cpu, []).extend(seqs)

    with ringtool.PerfBuffer(perf_producer.events, None, page_cnt=64) as pb:
        flow = Flow(perf_producer.emit)
        for _ in range(3):
            for online in (False, True):
                set_cpu1(online)
                for _ in range(20):
                    drain(pb)
        flow.end()
        drain(pb, None)
    assert sum("cpu 1 went offline" in n for n in notes) == 3, notes
    assert sum("cpu 1 came online: opened" in n for n in notes) == 3, notes
    assert got.get(1), "no event from cpu 1 was delivered"
    _check_invariant(perf_producer, got, [0, 1])


@pytest.mark.hotplug
@vm_only
def test_vm_group_cpu1_offline_online_while_events_flow(cpu1_restored: None) -> None:
    got: dict[int, list[int]] = {}
    notes: list[str] = []
    set_cpu1(False)  # offline at setup: no ring for cpu 1 until it comes online
    with RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 20) as group:
        prod = GroupProducer(group)
        rb = group.consumer()
        try:
            flow = Flow(prod.emit)

            def drain(limit: int | None = FLOW_READ) -> None:
                notes.extend(group.check_cpus(force=True))
                for cpu, seqs in _group_delivered(rb, limit).items():
                    got.setdefault(cpu, []).extend(seqs)

            for online in (True, False, True):
                set_cpu1(online)
                for _ in range(20):
                    drain()
            flow.end()
            drain(None)
            for cpu in (0, 1):
                seqs = got.get(cpu, [])
                assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs)
                assert len(seqs) + group.dropped()[cpu] == prod.produced(cpu), f"cpu {cpu}"
        finally:
            rb.close()
            prod.close()
    assert notes[0] == "cpu 1 came online: opened ring buffer 1 for it", notes
    assert "cpu 1 went offline: its ring buffer 1 is read until empty" in notes
    assert notes[-1] == "cpu 1 came online: it writes to its ring buffer 1 again", notes
    assert got.get(1), "no event from cpu 1 was delivered"
