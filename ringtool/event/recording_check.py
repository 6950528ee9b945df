"""A recording's per-batch checksums (docs/record.md): the Arrow IPC format has none,
and a value damaged on disk must not be read as data.

Format 2 (:func:`columns_crc`): CRC-32 (zlib's) of the batch's columns as Arrow holds
them, before compression: each column's validity bitmap, its values, offsets and bytes,
each buffer exactly as long as the column's rows need (so the writer's buffers and the
reader's, however allocated, give the same bytes); a column whose every row is null
gives its bitmap only (its values are not data: no reader takes them). Writing it costs
one pass over the batch's column bytes, not over the records'.

Format 1 (:func:`records_digest`, read only): a sum over the records themselves (their
64-bit words, each times an odd weight of its place), computed again from the records a
batch converts back to.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ringtool.event.arrow_records import RecordSchema
from ringtool.event.records import Records


def _crc_array(col: pa.Array, crc: int) -> int:
    """``crc`` extended by ``col``'s buffers (see the module doc)."""
    n = len(col)
    if not n:
        return crc
    if col.offset:
        raise ValueError("a column that does not begin at its buffers' start")
    bufs = col.buffers()
    if col.null_count:
        crc = zlib.crc32(memoryview(bufs[0])[: (n + 7) // 8], crc)  # type: ignore[arg-type]
        if col.null_count == n:
            return zlib.crc32(n.to_bytes(8, "little"), crc)
    kind = col.type
    if pa.types.is_dictionary(kind):
        crc = zlib.crc32(memoryview(bufs[1])[: n * kind.index_type.byte_width], crc)  # type: ignore[arg-type]
        return _crc_array(col.dictionary, crc)
    if pa.types.is_binary(kind) or pa.types.is_string(kind):
        return _crc_varwidth(bufs, n, np.int32, crc)
    if pa.types.is_large_binary(kind) or pa.types.is_large_string(kind):
        return _crc_varwidth(bufs, n, np.int64, crc)
    return zlib.crc32(memoryview(bufs[1])[: n * kind.byte_width], crc)  # type: ignore[arg-type]


def _crc_varwidth(bufs: list[pa.Buffer | None], n: int, otype: type[np.signedinteger[Any]],
                  crc: int) -> int:  # fmt: skip
    """``crc`` extended by a binary or string column's offsets and bytes."""
    offsets = np.frombuffer(bufs[1], otype, n + 1)  # type: ignore[arg-type]
    crc = zlib.crc32(offsets.data, crc)
    end = int(offsets[-1])
    return zlib.crc32(memoryview(bufs[2])[:end], crc) if end else crc  # type: ignore[arg-type]


def columns_crc(batch: pa.RecordBatch) -> str:
    """A record batch's checksum (format 2): its row count and the CRC-32 of its
    columns' buffers (see the module doc), as text."""
    crc = 0
    for col in batch.columns:
        crc = _crc_array(col, crc)
    return f"{batch.num_rows}:{crc:08x}"


def _unpadded(rec: np.ndarray[Any, Any], views: Mapping[int, np.dtype[Any]]) -> bytes:
    """The records' bytes with the ``pad`` members of their structs zeroed (not data:
    not recorded)."""
    pads = [n for n in rec.dtype.names or () if n.startswith("pad")]
    kinds = [(t, v) for t, v in views.items() if len(rec) and (rec["h"]["type"] == t).any()]
    if not pads and not kinds:
        return rec.tobytes()
    rec = rec.copy()
    for name in pads:
        rec[name] = 0
    for type_id, view in kinds:
        rows = rec["h"]["type"] == type_id
        as_view = rec.view(view)
        for name in view.names or ():
            if name.startswith("pad"):
                as_view[name][rows] = 0
    return rec.tobytes()


def records_digest(records: Records, schema: RecordSchema) -> str:
    """A format 1 batch's checksum, of its records (their bytes, pads zeroed, and the
    packets' bytes): the sum of its 64-bit words each times an odd weight of its place,
    mod 2**64 (any one damaged word changes it), and the length."""
    views = schema.layout.views
    raw = b"".join((_unpadded(records.events, views), _unpadded(records.net.rec, {}),
                    *(records.net.payload(i) for i in range(len(records.net)))))  # fmt: skip
    words = np.frombuffer(raw + b"\0" * (-len(raw) % 8), np.uint64)
    weights = np.arange(1, 2 * len(words), 2, dtype=np.uint64)
    with np.errstate(over="ignore"):
        total = int(np.sum(words * weights, dtype=np.uint64))
    return f"{len(raw)}:{total:016x}"


__all__ = ["columns_crc", "records_digest"]
