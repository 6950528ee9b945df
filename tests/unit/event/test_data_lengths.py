"""``data``'s kept bytes from the length the BPF programs store (``data_len``:
ringtool/event/data_lengths.py) are exactly the strings the scan finds; a stored
length that does not hold is not taken; and the records a read hands on (views of
the mapped ring, each after its header) are copied as they are."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.data_lengths import DATA_LEN
from ringtool.event.records import Records, copy_records
from tests.helpers.recordings import LAYOUT, SCHEMA, recorded, write_recording
from tests.helpers.records import SETTINGS, record, record_array
from tests.unit.event.test_recording import _read, _same

UNKNOWN = LAYOUT.constants["TRACE_DATA_LEN_UNKNOWN"]
WIDTH = LAYOUT.event["data"].itemsize
EXEC, OPEN = LAYOUT.type_id("exec"), LAYOUT.type_id("open")

#: What a row's ``data_len`` is: as the BPF programs store it ("bpf": the first NUL's
#: place for a named type but exec, UNKNOWN for exec and the rest), or any value.
stored = st.one_of(st.just("bpf"), st.just(UNKNOWN), st.integers(0, WIDTH + 4))


def _records(rows: list[tuple[Any, ...]], lens: list[object]) -> np.ndarray[Any, Any]:
    arr = record_array(rows)
    for row, how in zip(arr, lens, strict=True):
        t = int(row["h"]["type"])
        if how == "bpf":
            raw = bytes(row["data"].tobytes()).ljust(WIDTH, b"\0")
            named = t in LAYOUT.type_names and t != EXEC
            row[DATA_LEN] = raw.find(b"\0") if named and b"\0" in raw else UNKNOWN
        else:
            row[DATA_LEN] = how
    return arr


@SETTINGS
@given(st.lists(st.tuples(record, stored), max_size=12))
def test_stored_lengths_give_the_strings_the_scan_finds(rows: list[Any]) -> None:
    arr = _records([r for r, _ in rows], [h for _, h in rows])
    scanned = arr.copy()
    scanned[DATA_LEN] = UNKNOWN
    got = SCHEMA.to_arrow(Records(arr), 0).column("data")
    want = SCHEMA.to_arrow(Records(scanned), 0).column("data")
    bpf = [h == "bpf" or h == UNKNOWN for _, h in rows]
    assert [g for g, b in zip(got.to_pylist(), bpf, strict=True) if b] == [
        w for w, b in zip(want.to_pylist(), bpf, strict=True) if b
    ]


@SETTINGS
@given(st.lists(st.tuples(record, stored), max_size=12))
def test_a_batch_comes_back_as_the_reference_keeps_it(rows: list[Any]) -> None:
    arr = _records([r for r, _ in rows], [h for _, h in rows])
    got, _ = _read(write_recording([Records(arr)], summary={"type": "summary", "events": len(arr)}))
    assert len(got) == (1 if len(arr) else 0)
    if got:
        _same(got[0], Records(arr))
        assert got[0].events[DATA_LEN].tolist() == recorded(Records(arr)).events[DATA_LEN].tolist()


def test_a_stored_length_that_does_not_hold_is_not_taken() -> None:
    arr = np.zeros(4, LAYOUT.event)
    arr["h"]["type"] = OPEN
    arr["data"] = [b"/dev/null", b"/dev/null\0stale", b"/etc/passwd", b""]
    arr[DATA_LEN] = [3, 9, WIDTH, 0]  # not a NUL there; right; beyond; right
    data = SCHEMA.to_arrow(Records(arr), 0).column("data")
    assert data.to_pylist() == [b"/dev/null", b"/dev/null", b"/etc/passwd", b""]


def test_records_of_a_ring_are_copied_as_they_are() -> None:
    """A view after 8-byte headers (stride 8 + the record's size) is copied whole,
    every member's bytes, as numpy's assignment copies it."""
    n, size = 37, LAYOUT.event.itemsize
    raw = np.random.default_rng(7).integers(0, 256, 8 + n * (size + 8), np.uint8)
    view = np.ndarray((n,), LAYOUT.event, buffer=raw, offset=8, strides=(size + 8,))
    dst = np.empty(n, LAYOUT.event)
    copy_records(dst, view)
    assert dst.tobytes() == b"".join(bytes(raw[8 + i * (size + 8) :][:size]) for i in range(n))
    assert pa.array(dst["h"]["ts"]).equals(pa.array(view["h"]["ts"]))
