"""A flight recorder's dumps from perf rings: each CPU's events once, none lost.

A snapshot copies what every CPU's ring holds, written or not; the events a dump takes
are those newer than what an earlier dump wrote *for that CPU*."""

from __future__ import annotations

from typing import Any

import numpy as np

from ringtool.event.layout import load_layout
from ringtool.trace.recorder.flight import FlightSession


class _Snapshots:
    def __init__(self) -> None:
        self.rings: dict[int, list[bytes]] = {}

    def snapshot(self) -> dict[int, list[bytes]]:
        return {cpu: list(recs) for cpu, recs in self.rings.items()}


def _record(ts: int, pid: int) -> bytes:
    arr = np.zeros(1, dtype=load_layout().event)
    arr["h"]["ts"], arr["h"]["pid"] = ts, pid
    return arr.tobytes() + b"\0" * 4  # a perf sample is padded to 8 bytes


def _session(perf: _Snapshots) -> Any:
    s: Any = object.__new__(FlightSession)
    s.layout, s.perf, s.rb, s._last_ts = load_layout(), perf, None, {}
    s._written, s._damaged, s._outputs, s._exact, s.net = {}, {}, [], False, None
    return s


def test_an_older_event_of_another_cpu_is_not_lost_and_none_is_taken_twice() -> None:
    perf = _Snapshots()
    session = _session(perf)
    perf.rings = {0: [_record(100, 1)], 1: [_record(300, 2)]}
    assert list(session._take()["h"]["ts"]) == [100, 300]
    # CPU 0 then records an event older than CPU 1's newest already written
    perf.rings = {0: [_record(100, 1), _record(200, 3)], 1: [_record(300, 2)]}
    first = session._take()
    assert list(first["h"]["ts"]) == [200] and list(first["h"]["pid"]) == [3]
    assert len(session._take()) == 0  # nothing new: nothing again


def test_what_the_dumps_did_not_find_of_each_cpus_outputs_was_overwritten() -> None:
    perf = _Snapshots()
    session = _session(perf)
    # CPU 0's ring took 5 records and keeps the newest 2; CPU 1's took 1, kept, plus
    # one too short to be an event
    perf.rings = {0: [_record(400, 1), _record(500, 1)], 1: [_record(300, 2), b"\0" * 8]}
    session._outputs = [5, 2]
    session._take()
    ow = session.overwritten()
    assert (ow.per_cpu, ow.total, ow.damaged) == ({0: 3}, 3, 1)
    assert ow.key == "overwritten_min"  # the sources ran on: a lower bound
    # the final dump, sources detached: CPU 0 took 3 more, the ring keeps 2 of them
    perf.rings = {0: [_record(700, 1), _record(800, 1)], 1: [_record(300, 2), b"\0" * 8]}
    session._outputs, session._exact = [8, 2], True
    assert list(session._take()["h"]["ts"]) == [700, 800]
    ow = session.overwritten()
    assert (ow.per_cpu, ow.total, ow.key) == ({0: 4}, 4, "overwritten")
    assert ow.damaged == 1  # the short record, found by both dumps: one record
