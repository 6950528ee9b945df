"""``char[N]`` members as Arrow binary (ringtool/event/arrow_binary.py), read in place from
records of any layout: each value is its bytes up to a length per row, which
``lengths`` gives as up to the last non-NUL byte and ``nul_lengths`` as before the
``k``-th NUL (a C string's end; an exec's filename and arguments), so that no NUL
after the strings and no stale byte of a ring slot reaches a reader; nulls where a row
is not valid; and ``binary_matrix`` gives every value's bytes back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.event.arrow_binary import binary, binary_matrix, lengths, nul_lengths, strings
from ringtool.event.recording_check import ColumnsSum


def _held(col: pa.Array) -> str:
    """The column's bytes as Arrow holds them (what a recording's checksum sums)."""
    return ColumnsSum()(pa.record_batch([col], names=["x"]))


def _end(raw: bytes, k: int) -> int:
    """The reference: where a value ends (before its k-th NUL; 0 or fewer NULs: after
    its last non-NUL byte)."""
    at = -1
    for _ in range(k):
        at = raw.find(b"\0", at + 1)
        if at < 0:
            return len(raw.rstrip(b"\0"))
    return at if k else len(raw.rstrip(b"\0"))


@st.composite
def _fields(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    width = draw(st.sampled_from([1, 8, 13, 16, 24, 64, 256]))
    before = draw(st.sampled_from([0, 8, 12, 48]))  # the member's offset in its record
    piece = st.binary(max_size=width) | st.sampled_from([b"a\0b\0c", b"\0", b"x" * width])
    values = draw(st.lists(piece.map(lambda b: b[:width].ljust(width, b"\0")), max_size=40))
    rows = [
        v if not draw(st.booleans()) else (v[: len(v) // 2] + b"\0" + v)[:width] for v in values
    ]  # some with bytes after a NUL: stale
    rec = np.zeros(len(rows), [("a", f"V{before}") if before else ("a", "u1"),
                               ("x", f"S{width}"), ("z", "u8")])  # fmt: skip
    for i, v in enumerate(rows):
        rec["x"][i] = v
    flags = st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))
    valid = draw(st.one_of(st.none(), flags.map(lambda v: np.array(v, bool))))
    ks = draw(st.lists(st.integers(0, 4), min_size=len(rows), max_size=len(rows)))
    return rec, rows, valid, np.array(ks, np.intp)


@settings(max_examples=300, deadline=None)
@given(_fields())
def test_each_value_keeps_its_bytes_to_its_end(case) -> None:  # type: ignore[no-untyped-def]
    rec, rows, valid, ks = case
    width = rec.dtype["x"].itemsize
    ok = [valid is None or bool(valid[i]) for i in range(len(rows))]
    assert nul_lengths(rec["x"], ks).tolist() == [
        _end(r, int(k)) for r, k in zip(rows, ks, strict=True)
    ]
    col = strings(rec["x"], nul_lengths(rec["x"], ks), valid)
    col.validate(full=True)
    want = [
        r[: _end(r, int(k))] if ok[i] else None
        for i, (r, k) in enumerate(zip(rows, ks, strict=True))
    ]
    assert col.to_pylist() == want
    assert _held(col) == _held(pa.array(want, pa.binary()))  # the same buffers' bytes
    assert [bytes(r) for r in binary_matrix(col, width, "x")] == [
        (w or b"").ljust(width, b"\0") for w in want
    ]
    last = binary(rec["x"], valid)
    assert last.to_pylist() == [r.rstrip(b"\0") if ok[i] else None for i, r in enumerate(rows)]
    assert _held(last) == _held(pa.array(last.to_pylist(), pa.binary()))
    assert [bytes(r) for r in binary_matrix(last, width, "x")] == [
        r if ok[i] else b"\0" * width for i, r in enumerate(rows)
    ]


def test_a_path_ends_at_its_nul_and_an_exec_after_its_arguments() -> None:
    rec = np.zeros(3, [("comm", "S16"), ("data", "S256")])
    rec["comm"] = [b"bash", b"rt_bench_ab12cd", b"x"]
    rec["data"][0] = b"/dev/null"
    rec["data"][1] = b"/etc\0" + b"\0" * 190 + b"stale"  # a ring slot's older bytes
    rec["data"][2] = b"/bin/ls\0-l\0/tmp\0stale"
    col = strings(rec["data"], nul_lengths(rec["data"], np.array([1, 1, 3])), None)
    assert col.to_pylist() == [b"/dev/null", b"/etc", b"/bin/ls\0-l\0/tmp"]
    assert binary(rec["comm"], None).to_pylist() == [b"bash", b"rt_bench_ab12cd", b"x"]
    assert lengths(np.zeros((2, 0), np.uint8)).tolist() == [0, 0]
    assert strings(rec["data"][:0], np.zeros(0, np.intp), None).equals(pa.array([], pa.binary()))
