"""``char[N]`` members as Arrow binary (ringtool/event/arrow_binary.py), read in place from
records of any layout: each value is its bytes up to the last non-NUL one (members of
up to ``EXACT_WIDTH`` bytes) or up to the end of its last 8-byte word that is not all
NULs (wider ones), inner NULs and stale bytes kept, nulls where a row is not valid; and
``binary_matrix`` gives every value's bytes back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.event.arrow_binary import EXACT_WIDTH, binary, binary_matrix


def _kept(raw: bytes, width: int) -> bytes:
    """The reference: the bytes a value keeps."""
    n = len(raw.rstrip(b"\0"))
    if width > EXACT_WIDTH and width % 8 == 0:
        n = -(-n // 8) * 8
    return raw[:n]


@st.composite
def _fields(draw: st.DrawFn) -> tuple[np.ndarray, list[bytes], np.ndarray | None]:  # type: ignore[type-arg]
    width = draw(st.sampled_from([1, 8, 13, 16, 24, 64, 256]))
    before = draw(st.sampled_from([0, 8, 12, 48]))  # the member's offset in its record
    values = draw(st.lists(st.binary(max_size=width).map(
        lambda b: b.ljust(width, b"\0")), max_size=40))  # fmt: skip
    rows = [
        v if not draw(st.booleans()) else (v[: len(v) // 2] + b"\0" * width)[:width] for v in values
    ]  # some with NULs after a part: stale bytes
    rec = np.zeros(len(rows), [("a", f"V{before}") if before else ("a", "u1"),
                               ("x", f"S{width}"), ("z", "u8")])  # fmt: skip
    for i, v in enumerate(rows):
        rec["x"][i] = v
    flags = st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))
    valid = draw(st.one_of(st.none(), flags.map(lambda v: np.array(v, bool))))
    return rec, rows, valid


@settings(max_examples=300, deadline=None)
@given(_fields())
def test_each_value_keeps_its_bytes(case) -> None:  # type: ignore[no-untyped-def]
    rec, rows, valid = case
    width = rec.dtype["x"].itemsize
    col = binary(rec["x"], valid)
    col.validate(full=True)
    want = [_kept(r, width) if valid is None or valid[i] else None for i, r in enumerate(rows)]
    assert col.to_pylist() == want
    back = binary_matrix(col, width, "x")
    assert [bytes(r) for r in back] == [
        r if valid is None or valid[i] else b"\0" * width for i, r in enumerate(rows)
    ]


def test_data_is_kept_to_its_last_word_and_comm_to_its_last_byte() -> None:
    rec = np.zeros(2, [("comm", "S16"), ("data", "S256")])
    rec["comm"] = [b"bash", b"rt_bench_ab12cd"]
    rec["data"][0] = b"/dev/null"
    rec["data"][1] = b"/etc\0" + b"\0" * 190 + b"stale"  # a ring slot's older bytes
    assert binary(rec["comm"], None).to_pylist() == [b"bash", b"rt_bench_ab12cd"]
    assert binary(rec["data"], None).to_pylist() == [
        b"/dev/null".ljust(16, b"\0"),
        (b"/etc\0" + b"\0" * 190 + b"stale").ljust(200, b"\0"),
    ]
    assert binary(rec["data"][:0], None).equals(pa.array([], pa.binary()))
