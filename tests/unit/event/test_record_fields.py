"""A batch's members copied together in chunks of records (ringtool/event/record_fields.py):
each member's copy is the member, value for value, whatever the batch's length (across
chunk boundaries) and the records' stride (a ring's records, each after its header)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.event.layout import load_layout
from ringtool.event.record_fields import CHUNK, FieldGather, member

EVENT = load_layout().event
PATHS = [("h", "ts"), ("h", "type"), ("h", "comm"), ("value",), ("ret",), ("data_len",)]


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from([1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 7])
    | st.integers(0, 3 * CHUNK + 5),
    st.sampled_from([0, 8]),
    st.integers(0, 2**32 - 1),
)
def test_each_member_is_copied_as_it_is(n: int, header: int, seed: int) -> None:
    stride = EVENT.itemsize + header
    raw = np.random.default_rng(seed).integers(0, 256, n * stride + header, np.uint8)
    rec = np.ndarray((n,), EVENT, raw, header, (stride,))  # a ring's records
    got = FieldGather(PATHS)(rec)
    for path in PATHS:
        want = member(rec, path)
        assert got[path].flags.c_contiguous
        assert got[path].tobytes() == np.ascontiguousarray(want).tobytes()
