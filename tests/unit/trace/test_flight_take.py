"""A flight recorder's dumps from perf rings: each CPU's events once, none lost.

A snapshot copies what every CPU's ring holds, written or not; the events a dump takes
are those newer than what an earlier dump wrote *for that CPU*."""

from __future__ import annotations

from typing import Any

import numpy as np

from ringtool.event.layout import load_layout
from ringtool.trace.flight import FlightSession


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
