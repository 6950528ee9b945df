"""``char[N]`` record members as Arrow ``binary`` columns and back, and columns of nulls
(:mod:`ringtool.event.arrow_records`' helpers): whole-batch numpy operations, nothing
per record in Python.

A ``char[N]`` member is kept as its bytes up to its last non-NUL byte, or, when wider
than :data:`EXACT_WIDTH` and of whole 8-byte words (``data``), up to the end of its
last word that is not all NULs (inner NULs kept: exec's ``data`` is several strings;
nothing decoded or lost); :func:`binary` reads them from the records as they are (a
strided field: nothing copied but what is kept), :func:`binary_matrix` gives them
back as an ``(n, N)`` matrix (the NULs after them restored).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa

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


def _last_true(bits: Array) -> Array:
    """Per row of a bool matrix: the index of its last True (-1: none). Each 8 columns
    of a row are one uint64 of 0 and 1 bytes, whose float exponent says its last 1 byte
    (exactly: such a value is within 1% above its top power of two): whole-column
    operations, none along a row."""
    n, k = bits.shape
    if k % 8 or not bits.flags.c_contiguous:
        padded = np.zeros((n, -(-k // 8) * 8), bool)
        padded[:, :k] = bits
        bits = padded
    groups = bits.view(np.uint64)
    last = np.full(n, -1, np.intp)
    for j in range(groups.shape[1]):
        exp = np.frexp(groups[:, j].astype(np.float64))[1]
        last = np.where(exp > 0, j * 8 + (exp - 1) // 8, last)
    return last


def _word_bytes(words: Array) -> Array:
    """Per uint64 (little-endian): its bytes up to its last non-zero one (0 for 0)."""
    return _last_true(words.view(np.uint8).reshape(len(words), 8) != 0) + 1


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
        col = np.ascontiguousarray(words[:, j])
        lens = np.where(col != 0, j * 8 + _word_bytes(col), lens)
    return lens


#: ``char[N]`` members up to this wide are kept to their last non-NUL byte; wider ones
#: of whole 8-byte words (``data``) to the end of their last word that is not all NULs.
EXACT_WIDTH = 16


def binary(values: Array, valid: Array | None) -> pa.Array:
    """``char[N]`` values as binary (inner NULs kept: exec's ``data`` is several
    strings): up to :data:`EXACT_WIDTH` bytes, every byte up to the last non-NUL one;
    wider ones of whole 8-byte words, every word up to the last one not all NULs (so up
    to 7 NULs more: the words are moved whole, a byte's cost an eighth). ``values`` may
    be a field of the records (strided): nothing else is copied (:func:`_kept`)."""
    n = len(values)
    offsets = np.zeros(n + 1, np.int32)
    kept, data = _kept(values, valid) if n else (offsets[:0], np.zeros(0, np.uint8))
    np.cumsum(kept, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.binary(), n, [validity(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
    )


@functools.cache
def _prefixes(width: int) -> Array:
    """Row ``k``: ``width`` bools, the first ``k`` True, as one void value (a row of a
    mask taken by one 1-D index)."""
    table = np.arange(width) < np.arange(width + 1)[:, None]
    return table.view(np.dtype((np.void, width))).reshape(width + 1)


def _kept(values: Array, valid: Array | None) -> tuple[Array, Array]:
    """Some rows of :func:`binary`: the bytes each keeps, and those bytes. Up to
    :data:`EXACT_WIDTH`: the values copied whole (a few bytes a row), their bytes kept
    by a mask of each row's first ``length`` bytes; wider: the words kept gathered from
    the records by an index of each (whole-array operations, none along a row)."""
    n, width = len(values), values.dtype.itemsize
    m = values.reshape(n, 1).view(np.uint8)  # (n, width), the records' own bytes
    if width <= EXACT_WIDTH or width % 8:
        c = np.ascontiguousarray(m)
        kept = lengths(c)
        if valid is not None:
            kept = np.where(valid, kept, 0)
        return kept, c.reshape(-1)[_prefixes(width)[kept].view(bool).reshape(-1)]
    units = m.view(np.uint64)
    kept = _last_true(units != 0) + 1  # words
    if valid is not None:
        kept = np.where(valid, kept, 0)
    stride, k = m.strides[0], width // 8
    if stride % 8:  # records of a size not a multiple of 8: a mask of each row's words
        longest = int(kept.max())
        if not longest:
            return kept, np.zeros(0, np.uint8)
        mask = _prefixes(longest)[kept].view(bool).reshape(n, longest)
        return kept * 8, units[:, :longest][mask].view(np.uint8)
    # an index of every word kept, in the records seen as one run of words
    flat = np.lib.stride_tricks.as_strided(units, ((n - 1) * (stride // 8) + k,), (8,))
    starts = np.zeros(n, np.intp)
    np.cumsum(kept[:-1], out=starts[1:])
    index = np.repeat(np.arange(n, dtype=np.intp) * (stride // 8) - starts, kept)
    index += np.arange(int(index.size), dtype=np.intp)
    return kept * 8, flat[index].view(np.uint8)


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


__all__ = ["EXACT_WIDTH", "binary", "binary_matrix", "lengths", "nulls", "validity"]
