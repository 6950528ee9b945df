""":class:`ringtool.trace.recorder.flight_net.NetDumps` on hand-built samples: each dump returns
what no earlier dump returned, oldest first across CPUs, with a watermark per CPU."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.layout import load_layout
from ringtool.trace.recorder.flight_net import NetDumps, ts_offset

OFF = ts_offset(load_layout().net)


def sample(ts: int, tag: int = 0) -> bytes:
    raw = bytearray(load_layout().net.itemsize + 4)
    struct.pack_into("<Q", raw, OFF, ts)
    raw[-4:] = struct.pack("<I", tag)
    return bytes(raw)


def tss(out: list[tuple[int, bytes]]) -> list[tuple[int, int]]:
    return [(cpu, struct.unpack_from("<Q", raw, OFF)[0]) for cpu, raw in out]


def test_the_timestamp_is_where_the_layout_has_it() -> None:
    import numpy as np

    arr = np.frombuffer(sample(123456789), dtype=load_layout().net, count=1)
    assert int(arr[0]["h"]["ts"]) == 123456789


def test_each_dump_has_only_the_new_samples_in_timestamp_order() -> None:
    d = NetDumps(OFF)
    assert tss(d.take({0: [sample(10), sample(30)], 1: [sample(20)]})) == [
        (0, 10), (1, 20), (0, 30),
    ]  # fmt: skip
    # CPU 1 recorded 25 after its ring was copied but before CPU 0's 30: still new
    assert tss(d.take({0: [sample(30), sample(40)], 1: [sample(20), sample(25)]})) == [
        (1, 25), (0, 40),
    ]  # fmt: skip
    assert d.take({0: [sample(40)], 1: [sample(25)]}) == []


def test_a_sample_too_short_for_its_timestamp_is_counted() -> None:
    d = NetDumps(OFF)
    assert tss(d.take({0: [b"\x01" * OFF, sample(5)]})) == [(0, 5)]
    assert d.unreadable == 1


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 50)), max_size=60),
       st.lists(st.integers(0, 60), max_size=5))  # fmt: skip
def test_dumps_of_growing_rings_return_every_sample_once(
    stream: list[tuple[int, int]], cuts: list[int]
) -> None:
    """Samples arrive per CPU with growing timestamps; a ring keeps its newest 8. Every
    sample still in a ring at some dump is returned exactly once over all dumps."""
    per_cpu: dict[int, list[int]] = {}
    clock = 0
    d = NetDumps(OFF)
    got: list[int] = []
    kept: set[int] = set()
    for i, (cpu, step) in enumerate(stream):
        clock += step
        per_cpu.setdefault(cpu, []).append(clock)
        if i in cuts or i == len(stream) - 1:
            rings = {c: v[-8:] for c, v in per_cpu.items()}
            kept |= {t for v in rings.values() for t in v}
            got += [
                t for _c, t in tss(d.take({c: [sample(t) for t in v] for c, v in rings.items()}))
            ]
    assert sorted(got) == sorted(kept) and len(got) == len(set(got))
