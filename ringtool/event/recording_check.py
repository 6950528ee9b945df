"""A recording's per-batch checksums (docs/record.md): the Arrow IPC format has none,
and a value damaged on disk must not be read as data.

Format 3 (:class:`MessageSum`): the bytes the file holds for the batch (the messages
one write of the recorder wrote: the record batch's, after a dictionary's when one
comes with it; their metadata and their compressed buffers), as 64-bit words (the
last zero-padded), each times an odd weight of its place, mod 2**64, as 16 hex digits
in the batch's custom metadata (:data:`~ringtool.event.recording.SUM`). The digits
are in the message they sum: the sum is taken with :data:`PENDING` in their place
(the writer writes the message with it, sums, then puts the digits there; the reader
puts it back where the digits are, the first such string of the bytes that sums to
them, and sums).
Any one damaged word changes it, whether of the values, of the layout that says
where they are, or of the digits; a sixth of the bytes of format 2's sum (the
compressed buffers), and nothing read a column at a time.

Format 2 (:class:`ColumnsSum`, read only): the batch's columns as Arrow holds them, before
compression (each column's validity bitmap, its values, offsets and bytes, each buffer
exactly as long as the column's rows need, so the writer's buffers and the reader's,
however allocated, give the same bytes; a column whose every row is null gives its
bitmap and length only: its values are not data, no reader takes them), as 64-bit
words (each buffer's last ones zero-padded), summed each times an odd weight of its
place in the batch, mod 2**64: any one damaged word changes the sum (an odd weight
is invertible mod 2**64). One ``numpy.dot`` a buffer: a third of zlib's CRC-32's time.

Format 1 (:func:`records_digest`, read only): the same kind of sum over the records
themselves, computed again from the records a batch converts back to.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ringtool.event.arrow_records import RecordSchema
from ringtool.event.records import Records

Array = np.ndarray[Any, Any]
_MASK = (1 << 64) - 1


def _extents(col: pa.Array) -> Iterator[memoryview | bytes]:
    """The bytes of ``col`` that :class:`ColumnsSum` sums (see the module doc)."""
    n = len(col)
    if not n:
        return
    if col.offset:
        raise ValueError("a column that does not begin at its buffers' start")
    bufs = col.buffers()
    if col.null_count:
        yield memoryview(bufs[0])[: (n + 7) // 8]  # type: ignore[arg-type]
        if col.null_count == n:
            yield n.to_bytes(8, "little")
            return
    kind = col.type
    if pa.types.is_dictionary(kind):
        yield memoryview(bufs[1])[: n * kind.index_type.byte_width]  # type: ignore[arg-type]
        yield from _extents(col.dictionary)
    elif pa.types.is_binary(kind) or pa.types.is_string(kind):
        yield from _varwidth(bufs, n, np.int32)
    elif pa.types.is_large_binary(kind) or pa.types.is_large_string(kind):
        yield from _varwidth(bufs, n, np.int64)
    else:
        yield memoryview(bufs[1])[: n * kind.byte_width]  # type: ignore[arg-type]


def _varwidth(bufs: list[pa.Buffer | None], n: int,
              otype: type[np.signedinteger[Any]]) -> Iterator[memoryview]:  # fmt: skip
    """A binary or string column's offsets and bytes."""
    offsets = np.frombuffer(bufs[1], otype, n + 1)  # type: ignore[arg-type]
    yield offsets.data.cast("B")
    end = int(offsets[-1])
    if end:
        yield memoryview(bufs[2])[:end]  # type: ignore[arg-type]


class _Weights:
    """The odd weights of the words' places, as many as the largest batch's words."""

    def __init__(self) -> None:
        self._weights: Array = np.zeros(0, np.uint64)

    def _weights_for(self, words: int) -> Array:
        if len(self._weights) < words:
            size = max(words, 2 * len(self._weights), 1 << 16)
            odd = np.arange(size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
            with np.errstate(over="ignore"):
                self._weights = odd * np.uint64(0x9E3779B97F4A7C15)  # odd times odd: odd
        return self._weights


#: Format 3's checksum: its hex digits, and what is in their place while it is taken.
SUM_DIGITS = 16
PENDING = b"-" * SUM_DIGITS
#: The digits as the message holds them (a flatbuffer string: its length, its bytes,
#: a NUL), around them.
_BEFORE, _AFTER = SUM_DIGITS.to_bytes(4, "little"), b"\0"


class MessageSum(_Weights):
    """Format 3's checksum of record batches (see the module doc)."""

    def _sum(self, message: bytes | bytearray) -> int:
        k = len(message) // 8
        words = np.frombuffer(message, np.uint64, k)
        total = int(np.dot(words, self._weights_for(k + 1)[:k]))
        if len(message) % 8:
            total += int.from_bytes(message[8 * k :], "little") * int(self._weights[k])
        return total & _MASK

    @staticmethod
    def _digits_at(message: bytes | bytearray, digits: bytes) -> int:
        at = message.find(_BEFORE + digits + _AFTER)
        return at + len(_BEFORE) if at >= 0 else -1

    def seal(self, message: bytearray) -> None:
        """Put the checksum of ``message`` (a write's messages, the batch's custom
        metadata holding :data:`PENDING` as the sum) in place of :data:`PENDING`."""
        at = self._digits_at(message, PENDING)
        if at < 0:
            raise ValueError("the batch's message holds no place for its checksum")
        message[at : at + SUM_DIGITS] = b"%016x" % self._sum(message)

    def check(self, message: bytes, digits: bytes) -> bool:
        """Whether ``message`` (the bytes read for a batch) sums to ``digits`` (its
        custom metadata's)."""
        if len(digits) != SUM_DIGITS:
            return False
        pattern, at = _BEFORE + digits + _AFTER, -1
        while (at := message.find(pattern, at + 1)) >= 0:  # the first, unless the same
            held = bytearray(message)  # digits came before it (a chance of 2**-64)
            held[at + len(_BEFORE) : at + len(_BEFORE) + SUM_DIGITS] = PENDING
            if digits == b"%016x" % self._sum(held):
                return True
        return False


class ColumnsSum(_Weights):
    """Format 2's checksum of record batches (see the module doc)."""

    def __call__(self, batch: pa.RecordBatch) -> str:
        """The batch's checksum: its row count and the sum, as text."""
        parts = [x for col in batch.columns for x in _extents(col)]
        weights = self._weights_for(sum(-(-len(x) // 8) for x in parts))
        total, at = 0, 0
        for x in parts:
            k = len(x) // 8
            if k:
                words = np.frombuffer(x, np.uint64, k)
                total += int(np.dot(words, weights[at : at + k]))
                at += k
            if len(x) % 8:
                total += int.from_bytes(x[8 * k :], "little") * int(weights[at])
                at += 1
        return f"{batch.num_rows}:{total & _MASK:016x}"


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


__all__ = ["PENDING", "SUM_DIGITS", "ColumnsSum", "MessageSum", "records_digest"]
