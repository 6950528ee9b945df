"""``char[N]`` record members as Arrow ``binary`` columns and back, and columns of nulls
(:mod:`ringtool.event.arrow_records`' helpers): whole-batch numpy operations, nothing
per record in Python.

A value is the member's bytes up to a length given per row (:func:`strings`): up to
its last non-NUL byte (:func:`lengths`, ``comm``), or up to its ``k``-th NUL
(:func:`nul_lengths`: a C string is ``k = 1``, an exec's filename and arguments
``1 +`` their count), so that what a reader sees is the record's strings: no NULs
after them, no stale bytes of the ring slot past them. :func:`strings` reads them from
the records as they are (a strided field: nothing copied but what is kept),
:func:`binary_matrix` gives them back as an ``(n, N)`` matrix (NULs after them).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ringtool.errors import RecordingError

Array = np.ndarray[Any, Any]


def validity(valid: Array | None) -> pa.Buffer | None:
    """An Arrow validity bitmap of ``valid`` (None: every row valid, no bitmap)."""
    return None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))


def nulls(arrow: pa.DataType, n: int, zeros: pa.Buffer) -> pa.Array:
    """A column of ``n`` nulls whose buffers are slices of ``zeros`` (at least 16 bytes
    a row, and 8: as big as the widest column's): nothing allocated or written."""

    def z(size: int) -> pa.Buffer:
        return zeros.slice(0, size)

    if pa.types.is_binary(arrow):
        bufs = [z((n + 7) // 8), z(4 * (n + 1)), z(0)]
    elif pa.types.is_large_binary(arrow):
        bufs = [z((n + 7) // 8), z(8 * (n + 1)), z(0)]
    else:
        bufs = [z((n + 7) // 8), z(n * arrow.byte_width)]
    return pa.Array.from_buffers(arrow, n, bufs, null_count=n)


#: A uint64 of bytes has a NUL byte when ``(w - LO) & ~w & HI`` is not zero, whose
#: lowest set bit is that of its first NUL (the bits above it may be wrong: not used);
#: ``((w & LOW7) + LOW7 | w) & HI`` has the top bit of each non-NUL byte set, exactly.
_LO, _HI = np.uint64(0x0101010101010101), np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)


def _word_bytes(words: Array) -> Array:
    """Per uint64 (little-endian): its bytes up to its last non-zero one (0 for 0):
    the float exponent of its non-NUL bytes' top bits (exact: the bits below the
    53 a float keeps are worth less than half its last one)."""
    top = ((words & _LOW7) + _LOW7 | words) & _HI
    return np.frexp(top.astype(np.float64))[1] // 8  # type: ignore[no-any-return]


def lengths(m: Array) -> Array:
    """Each row's length up to its last non-NUL byte, of a C-contiguous ``(n, width)``
    uint8 matrix: rows of whole 8-byte words a word column at a time (the last
    non-zero word, then the bytes of it), else byte by byte."""
    n, width = m.shape
    if width % 8 or not n:
        nonzero = m != 0
        return np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0)
    words = m.view(np.uint64)
    lens = np.zeros(n, np.intp)
    for j in range(words.shape[1]):
        kept = _word_bytes(words[:, j])
        lens = np.where(kept > 0, j * 8 + kept, lens)
    return lens


def _words(values: Array) -> Array | None:
    """A ``char[N]`` field (any stride) as an ``(n, N / 8)`` uint64 view of the records'
    own bytes, or None where its width, stride or address is not of whole words."""
    m = values.reshape(len(values), 1).view(np.uint8)
    if m.shape[1] % 8 or m.strides[0] % 8 or m.ctypes.data % 8:
        return None
    return m.view(np.uint64)


def _first_nul(values: Array, rows: Array) -> Array:
    """For ``rows`` of a ``char[N]`` field: the index of the first NUL (N: none). Word
    by word, only over the rows whose NUL is not found yet (most strings end within
    their first words)."""
    width = values.dtype.itemsize
    out = np.full(len(rows), width, np.intp)
    words = _words(values)
    if words is None:
        m = values.reshape(len(values), 1).view(np.uint8)[rows]
        zero = m == 0
        return np.where(zero.any(axis=1), np.argmax(zero, axis=1), width)  # type: ignore[no-any-return]
    left = np.arange(len(rows))  # places in `rows` not found yet
    for j in range(words.shape[1]):
        w = words[rows[left], j]
        mark = (w - _LO) & ~w & _HI
        found = mark != 0
        if found.any():
            low = mark[found] & (~mark[found] + np.uint64(1))  # its lowest set bit
            out[left[found]] = j * 8 + (np.frexp(low.astype(np.float64))[1] - 1) // 8
            left = left[~found]
            if not len(left):
                break
    return out


def nul_lengths(values: Array, k: Array) -> Array:
    """Per row of a ``char[N]`` field (any stride): the bytes before its ``k``-th NUL;
    up to its last non-NUL byte where ``k`` is 0 or it has fewer NULs."""
    n, width = len(values), values.dtype.itemsize
    out = np.zeros(n, np.intp)
    one = k == 1
    if one.all():
        return _first_nul(values, np.arange(n))
    if one.any():
        rows = np.flatnonzero(one)
        out[rows] = _first_nul(values, rows)
    rest = np.flatnonzero(~one)
    if len(rest):
        m = np.ascontiguousarray(values.reshape(n, 1).view(np.uint8)[rest])
        kk = k[rest]
        # every NUL's place among the rows' bytes (in order), each row's first and
        # one past its last among them: its k-th is the (k-1)-th after its first
        nuls = np.flatnonzero(m.reshape(-1) == 0)
        base = np.arange(len(rest), dtype=np.intp) * width
        first = np.searchsorted(nuls, base)
        kth = first + kk - 1
        has = (kk > 0) & (kth < np.searchsorted(nuls, base + width))
        got = np.zeros(len(rest), np.intp)
        got[has] = nuls[kth[has]] - base[has]
        if not has.all():
            got[~has] = lengths(np.ascontiguousarray(m[~has]))
        out[rest] = got
    return out


#: ``char[]`` members up to this wide are names (``comm``: kept to their last non-NUL
#: byte); wider ones (``data``) hold strings cut at a NUL.
NARROW = 16

#: A value of a ``binary_view`` of up to this many bytes is held in its view (the
#: Arrow columnar format, "Variable-size Binary View Layout"); a longer one by its
#: buffer and offset.
_INLINE = 12
#: The largest offset a view holds (int32).
_VIEW_MAX = (1 << 31) - 1


def _pool() -> pa.MemoryPool:
    """Where Arrow's casts put the columns: the C library's allocator, as numpy's
    arrays (Arrow's default, mimalloc, gives a recorder's batch-sized blocks back to
    the system between batches a fifth of a second apart: each batch's columns were
    page faults again, 20 to 50 ns an event)."""
    return pa.system_memory_pool()


@functools.lru_cache(maxsize=4)
def row_starts(n: int, stride: int) -> Array:
    """Each of ``n`` values' first byte in a :func:`byte_span` of them ``stride`` bytes
    apart (intp, read only)."""
    starts = np.arange(n, dtype=np.intp) * stride
    starts.flags.writeable = False
    return starts


@functools.lru_cache(maxsize=4)
def _view_places(n: int, stride: int) -> Array:
    """Per row of ``n`` values ``stride`` bytes apart: a view's buffer index (0) and
    offset (its row's first byte) as one little-endian int64 (read only)."""
    places = row_starts(n, stride).astype(np.int64) << 32
    places.flags.writeable = False
    return places


def byte_span(values: Array) -> tuple[Array, int]:
    """``values``' own bytes as one uint8 run from the first value to the end of the
    last (a view: nothing copied), and the stride of a value in it; a copy where the
    stride is not positive or the run is longer than a view's offset reaches."""
    n, width = len(values), values.dtype.itemsize
    stride = values.strides[0] if n > 1 else width
    if stride <= 0 or (n - 1) * stride + width > _VIEW_MAX:
        values, stride = np.ascontiguousarray(values), width
    m = values.reshape(n, 1).view(np.uint8)
    return np.lib.stride_tricks.as_strided(m, ((n - 1) * stride + width,), (1,)), stride


def strings(values: Array, lens: Array, valid: Array | None) -> pa.Array:
    """``char[N]`` values (any stride: nothing else is copied) as binary, each row its
    first ``lens`` bytes (inner NULs kept: exec's ``data`` is several strings); null
    where ``valid`` is False (None: every row valid). The rows are a ``binary_view``
    of the records' own bytes (each its length and first bytes; a longer one its
    offset among them), cast to ``binary`` by Arrow: one copy of the kept bytes."""
    n, width = len(values), values.dtype.itemsize
    if valid is not None:
        lens = np.where(valid, lens, 0)
    if not n or not lens.any():
        offsets = np.zeros(n + 1, np.int32)
        return pa.Array.from_buffers(
            pa.binary(), n, [validity(valid), pa.py_buffer(offsets), pa.py_buffer(b"")]
        )
    span, stride = byte_span(values)
    views = np.zeros((n, 16), np.uint8)  # length, then the bytes or prefix, index, offset
    head = np.dtype((np.void, min(width, _INLINE)))  # each value's first bytes, one item
    np.ndarray((n,), head, views, 4, (16,))[...] = np.ndarray((n,), head, span, 0, (stride,))
    views.view(np.int32)[:, 0] = lens
    # a longer value's buffer (0: the one) and offset, over its bytes past the prefix
    np.copyto(views.view(np.int64)[:, 1], _view_places(n, stride), where=lens > _INLINE)
    view = pa.Array.from_buffers(
        pa.binary_view(), n, [validity(valid), pa.py_buffer(views), pa.py_buffer(span)]
    )
    return pc.cast(view, pa.binary(), memory_pool=_pool())


def binary(values: Array, valid: Array | None) -> pa.Array:
    """``char[N]`` values as binary, each up to its last non-NUL byte (the values
    copied once, contiguous, as ``fixed_size_binary``; Arrow casts them to ``binary``
    and trims the NULs after each: :func:`lengths`' lengths)."""
    n, width = len(values), values.dtype.itemsize
    c = np.ascontiguousarray(values.reshape(n, 1).view(np.uint8))  # bytes: memcpy
    fixed = pa.Array.from_buffers(pa.binary(width), n, [validity(valid), pa.py_buffer(c)])
    text = pc.cast(fixed, pa.binary(), memory_pool=_pool()).view(pa.string())  # bytes: no UTF-8
    return pc.ascii_rtrim(text, characters="\0", memory_pool=_pool()).view(pa.binary())


def binary_matrix(col: pa.Array, width: int, name: str) -> Array:
    """A binary column as an ``(n, width)`` uint8 matrix, each value's bytes then zeros
    (nulls: zeros); a value longer than ``width`` is a :class:`RecordingError`."""
    n = len(col)
    bufs = col.buffers()
    otype = np.int64 if pa.types.is_large_binary(col.type) else np.int32
    offsets = np.frombuffer(bufs[1], otype)[col.offset : col.offset + n + 1].astype(np.int64)
    lens = np.diff(offsets)
    if col.null_count:
        lens = np.where(np.asarray(col.is_valid()), lens, 0)
    if len(lens) and int(lens.max()) > width:
        raise RecordingError(
            f"column {name}: a value of {int(lens.max())} bytes, the layout holds {width}"
        )
    out = np.zeros((n, width), np.uint8)
    if bufs[2] is None or not len(lens) or not lens.sum():
        return out
    data = np.frombuffer(bufs[2], np.uint8)
    rows = np.repeat(np.arange(n), lens)
    cols = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    out[rows, cols] = data[np.repeat(offsets[:-1], lens) + cols]
    return out


__all__ = ["NARROW", "binary", "binary_matrix", "byte_span", "lengths", "nul_lengths", "nulls",
           "row_starts", "strings", "validity"]  # fmt: skip
