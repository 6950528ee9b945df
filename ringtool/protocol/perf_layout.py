"""The perf ring layout, declared once, and the user page's ``data_head``/``data_tail``
accessors (the memory ordering of both is explained in :mod:`ringtool.protocol.perf`).

Layout (include/uapi/linux/perf_event.h, kernel/events/ring_buffer.c):

* user page (``struct perf_event_mmap_page``): ``u64 data_head`` at 1024, ``u64
  data_tail`` at 1032, ``u64 data_offset`` at 1040, ``u64 data_size`` at 1048;
* data: ``data_size`` bytes (2^n pages) mapped *once*: a record that runs past the end
  continues at offset 0 (the walk reassembles it);
* record: ``struct perf_event_header { u32 type; u16 misc; u16 size; }`` then the body;
  ``size`` counts the header and is a multiple of 8 (perf_prepare_header);
* ``PERF_RECORD_SAMPLE`` with ``sample_type == PERF_SAMPLE_RAW``: header, ``u32 size``,
  ``size`` raw bytes (the BPF output, padded by the kernel so the record is 8-aligned);
* ``PERF_RECORD_LOST``: header, ``u64 id``, ``u64 lost``.
"""

from __future__ import annotations

from typing import Any

from ringtool.protocol.own_position import OwnPosition

# struct perf_event_mmap_page (include/uapi/linux/perf_event.h): u64 word indices.
DATA_HEAD_OFF = 1024
DATA_TAIL_OFF = 1032
DATA_OFFSET_OFF = 1040
DATA_SIZE_OFF = 1048
# struct perf_event_header + enum perf_event_type (include/uapi/linux/perf_event.h).
HEADER_SIZE = 8
PERF_RECORD_LOST = 2
PERF_RECORD_SAMPLE = 9
RAW_OFF = 12  # PERF_SAMPLE_RAW: header, u32 size @8, raw bytes @12
LOST_COUNT_OFF = 16  # PERF_RECORD_LOST: header, u64 id @8, u64 lost @16
LOST_SIZE = 24
TYPE_MASK = 0xFFFFFFFF  # header as one little-endian u64: type | misc << 32 | size << 48

# Segment kinds produced by PerfRing.segments().
RUN = 0  # n equal SAMPLEs, contiguous in the data area
BYTES = 1  # one SAMPLE reassembled across the wrap (payload as bytes)
LOST = 2  # one PERF_RECORD_LOST (count in `n`)
SKIP = 3  # one record of another type (counted in `unknown`)

#: (kind, start_pos, end_pos, offset, n, stride, raw_len, payload)
Segment = tuple[int, int, int, int, int, int, int, bytes | None]


class UserPage:
    """``data_head``/``data_tail`` of a ``perf_event_mmap_page`` held in ``page`` (a
    buffer of at least 1056 bytes, 8-aligned; writable unless read-only use).

    ``data_tail`` is this consumer's **own** position
    (:class:`~ringtool.protocol.own_position.OwnPosition`): the shared word is read once,
    here, and afterwards only stored; :meth:`check_tail` finds a shared word someone
    else changed (counted in ``scribbles``, ours stored back,
    :class:`~ringtool.errors.ConsumerPositionError`).
    """

    __slots__ = ("_own", "_q")

    def __init__(self, page: Any) -> None:
        self._q = memoryview(page).cast("B")[:4096].cast("Q")
        self._own = OwnPosition(self._q, DATA_TAIL_OFF >> 3, "perf data_tail")

    @property
    def data_head(self) -> int:
        # acquire: pairs with smp_wmb() + the data_head store in perf_output_put_handle
        return self._q[DATA_HEAD_OFF >> 3]

    @property
    def data_tail(self) -> int:
        """This consumer's own tail (private; see the class doc)."""
        return self._own.pos

    @property
    def scribbles(self) -> int:
        """Times the shared data_tail held a value this consumer had not stored."""
        return self._own.scribbles

    def set_data_tail(self, pos: int) -> None:
        """Release-store: pairs with READ_ONCE(user_page->data_tail) + smp_mb() in
        perf_output_begin (the kernel frees the space only after this store)."""
        self._own.store(pos & 0xFFFFFFFFFFFFFFFF)

    def take_over(self) -> None:
        """Adopt the shared ``data_tail`` as our own (a deliberate hand-over between
        consumers of the same ring, one after the other)."""
        self._own.take_over()

    def check_tail(self) -> None:
        """Raise :class:`~ringtool.errors.ConsumerPositionError` (counted, our tail
        stored back — a release store that pairs with READ_ONCE(user_page->data_tail)
        + smp_mb() in perf_output_begin) when the shared ``data_tail`` is not ours."""
        self._own.check()

    @property
    def data_offset(self) -> int:
        return self._q[DATA_OFFSET_OFF >> 3]

    @property
    def data_size(self) -> int:
        return self._q[DATA_SIZE_OFF >> 3]

    def release(self) -> None:
        self._q.release()
