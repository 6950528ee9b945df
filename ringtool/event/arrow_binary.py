"""``char[N]`` record members as Arrow ``binary`` columns and back, and columns of nulls
(:mod:`ringtool.event.arrow_records`' helpers): whole-batch numpy operations, nothing
per record in Python.

A ``char[N]`` member is kept as its bytes up to its last non-NUL byte (inner NULs kept:
exec's ``data`` is several strings; nothing decoded or lost); :func:`binary` reads
them from the records as they are (a strided field: nothing copied but the bytes
kept), :func:`binary_matrix` gives them back as an ``(n, N)`` matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ringtool.errors import RecordingError

Array = np.ndarray[Any, Any]


def validity(valid: Array | None) -> pa.Buffer | None:
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


def lengths(m: Array) -> Array:
    """Each row's length up to its last non-NUL byte, of an ``(n, width)`` uint8 matrix
    (any row stride). Rows of whole 8-byte words: the last non-zero word, then the last
    non-zero byte in it (:func:`_last_true`); else byte by byte."""
    n, width = m.shape
    if width % 8 or not n:
        nonzero = m != 0
        return np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0)
    words = m.view(np.uint64)
    last = _last_true(words != 0)
    word = words[np.arange(n), np.maximum(last, 0)]
    in_word = _last_true(word.view(np.uint8).reshape(n, 8) != 0)
    return np.where(last >= 0, last * 8 + in_word + 1, 0)


#: ``char[N]`` members up to this wide are kept to their last non-NUL byte; wider ones
#: (``data``) to the end of their last 8-byte word that is not all NULs.
EXACT_WIDTH = 16


def binary(values: Array, valid: Array | None) -> pa.Array:
    """``char[N]`` values as binary (inner NULs kept: exec's ``data`` is several
    strings): up to :data:`EXACT_WIDTH` bytes, every byte up to the last non-NUL one;
    wider, every 8-byte word up to the last one not all NULs (so up to 7 NULs more: the
    words are moved whole, a byte's cost an eighth). ``values`` may be a field of the
    records (strided): nothing is copied but what is kept, gathered by a mask of the
    rows' first bytes or words (as many as the longest has) or, when that would be
    mostly empty, by an index of every byte kept."""
    n, width = len(values), values.dtype.itemsize
    m = values.reshape(n, 1).view(np.uint8)  # (n, width), the records' own bytes
    whole = width > EXACT_WIDTH and width % 8 == 0 and n
    units = m.view(np.uint64) if whole else m
    kept = _last_true(units != 0) + 1 if whole else lengths(m)  # units kept per row
    if valid is not None:
        kept = np.where(valid, kept, 0)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(kept * units.itemsize, out=offsets[1:])
    total = int(offsets[-1])
    longest = int(kept.max()) if n else 0
    if not total:
        data = np.zeros(0, np.uint8)
    elif whole or n * longest <= 8 * total:
        data = units[:, :longest][np.arange(longest) < kept[:, None]]
    else:
        stride = m.strides[0]
        flat = np.lib.stride_tricks.as_strided(m, ((n - 1) * stride + width,), (1,))
        index = np.repeat(np.arange(n, dtype=np.intp) * stride - offsets[:-1], kept)
        index += np.arange(total, dtype=np.intp)
        data = flat[index]
    return pa.Array.from_buffers(
        pa.binary(), n, [validity(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
    )


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
