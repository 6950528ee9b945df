"""``copy_records`` (ringtool/event/records.py): the records a recorder keeps are the
ones it was given, byte for byte, whether copied as bytes (contiguous arrays of one
dtype) or by numpy's assignment (a strided source: a field's view, every other row)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.event.layout import load_layout
from ringtool.event.records import copy_records

LAYOUT = load_layout()
SIZE = LAYOUT.event.itemsize


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=SIZE, max_size=SIZE), max_size=12), st.integers(1, 3),
       st.integers(0, 4))  # fmt: skip
def test_the_copy_is_the_records_bytes(raws, step, at) -> None:  # type: ignore[no-untyped-def]
    whole = np.frombuffer(b"".join(raws), LAYOUT.event) if raws else np.zeros(0, LAYOUT.event)
    src = whole[::step]
    dst = np.zeros(len(src) + at + 2, LAYOUT.event)
    copy_records(dst[at : at + len(src)], src)
    assert dst[at : at + len(src)].tobytes() == b"".join(raws[::step])
    assert not dst[:at].tobytes().strip(b"\0") and not dst[at + len(src) :].tobytes().strip(b"\0")


def test_records_of_another_dtype_are_assigned_member_by_member() -> None:
    src = np.zeros(3, np.dtype([("h", [("pid", "<u4")]), ("x", "<u8")]))  # packed
    src["h"]["pid"], src["x"] = [1, 2, 3], [7, 8, 9]
    dst = np.zeros(3, np.dtype([("h", [("pid", "<u4")]), ("x", "<u8")], align=True))
    copy_records(dst, src)
    assert dst["h"]["pid"].tolist() == [1, 2, 3] and dst["x"].tolist() == [7, 8, 9]
