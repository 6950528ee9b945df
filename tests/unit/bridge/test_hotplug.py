"""KMES bridge and CPU hotplug: a CPU that comes online after start gets a buffer, and
attached readers learn of it through a generation change (docs/kmes.md §10.4).

The CPUs here are numbers (no real hotplug): a bridge started with CPU 0 receives
events from CPU 1, as it does when CPU 1 comes online. The real offline/online run is
in tests/kernel/bridge/test_hotplug.py (VM only).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from ringtool.bridge.core import KmesBridge
from ringtool.kmes import layout as L
from ringtool.kmes.attach import attach, attach_new
from ringtool.kmes.reader import Reader
from tests.helpers.kmes import kmes_read


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[KmesBridge]:
    b = KmesBridge(
        [0], socket_path=str(tmp_path / "kmes.sock"), capacity=1 << 16, possible=[0, 1, 2]
    )
    b.start()
    yield b
    b.close()


def emit(b: KmesBridge, cpu: int, first: int, count: int) -> None:
    """``count`` events on ``cpu``; payload = a running number (8 bytes LE)."""
    for i in range(first, first + count):
        b.submit(cpu, L.ORIGIN_RINGBUF, 9, i.to_bytes(8, "little"))
    b.flush()


def drain(readers: list[Reader]) -> dict[int, list[tuple[int, int]]]:
    """(seq, payload number) per CPU, until every reader is empty."""
    out: dict[int, list[tuple[int, int]]] = {r.cpu: [] for r in readers}
    busy = True
    while busy:
        busy = False
        for r in readers:
            evs = r.drain()
            busy |= bool(evs)
            out[r.cpu] += [(e.seq, int.from_bytes(e.payload, "little")) for e in evs]
    return out


def test_new_cpu_gets_a_buffer_announced_by_generation(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    readers = attach(bridge.socket_path, start="tail")
    assert [r.cpu for r in readers] == [0]
    emit(bridge, 0, 1, 30)
    got = drain(readers)
    emit(bridge, 1, 1000, 20)  # CPU 1 "came online": its first events
    emit(bridge, 0, 31, 10)
    assert list(bridge.notes) == ["CPU 1 came online: new KMES buffer, generation 2 announced"]
    assert bridge.cpus == [0, 1] and bridge.unknown_cpu == 0
    more = drain(readers)  # CPU 0's reader follows the switch to generation 2
    assert readers[0].generation == 2 and readers[0].stats.generations == 1
    added = attach_new(bridge.socket_path, [r.cpu for r in readers])
    assert [r.cpu for r in added] == [1] and added[0].generation == 2
    new = drain(added)
    cpu0 = got[0] + more[0]
    assert cpu0 == [(i, i) for i in range(1, 41)]  # nothing lost or repeated on CPU 0
    assert new[1] == [(i, 999 + i) for i in range(1, 21)]  # CPU 1 from its first event
    assert attach_new(bridge.socket_path, [0, 1]) == []
    for r in readers + added:
        assert r.stats.lapped_events == 0 and r.stats.gap_events == 0
        r.close()


def test_impossible_cpu_is_counted_not_given_a_buffer(bridge: KmesBridge) -> None:
    emit(bridge, 7, 1, 5)
    assert bridge.unknown_cpu == 5 and bridge.cpus == [0] and not bridge.notes


def test_cpu_seen_before_start_gets_a_boot_buffer(tmp_path: Path) -> None:
    b = KmesBridge([0], socket_path=None, capacity=1 << 14, possible=[0, 1])
    emit(b, 1, 1, 3)  # before start: boot buffers, no announcement needed
    b.start()
    emit(b, 1, 4, 2)
    assert b.cpus == [0, 1] and not b.notes
    info = b._provide()
    fds = info.fds
    readers = [
        Reader(fds[i], fds[i + 1], generation=info.generation, cpu=c, start="tail")
        for i, c in zip(range(0, len(fds), 2), info.cpus, strict=True)
    ]
    assert drain(readers)[1] == [(i, i) for i in range(1, 6)]
    for r in readers:
        r.close()
    b.close()


def _lines_until(stream: IO[str], want: int, deadline: float) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    while len(out) < want:
        assert time.monotonic() < deadline, f"only {len(out)} of {want} lines"
        line = stream.readline()
        assert line, "kmes-read ended early"
        out.append(json.loads(line))
    return out


def test_kmes_read_follow_picks_up_a_new_cpu(bridge: KmesBridge) -> None:
    assert bridge.socket_path is not None
    emit(bridge, 0, 1, 10)
    p = kmes_read(bridge.socket_path, "--json", "--follow")
    try:
        assert p.stdout is not None
        deadline = time.monotonic() + 60
        first = _lines_until(p.stdout, 10, deadline)
        emit(bridge, 1, 500, 7)
        emit(bridge, 0, 11, 3)
        rest = _lines_until(p.stdout, 10, deadline)
    finally:
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=30)
    by_cpu: dict[object, list[object]] = {}
    for ev in first + rest:
        by_cpu.setdefault(ev["cpu"], []).append(ev["seq"])
    assert by_cpu == {0: list(range(1, 14)), 1: list(range(1, 8))}, err
    assert "bridge added CPU(s) [1]" in err
    assert os.path.exists(bridge.socket_path)
