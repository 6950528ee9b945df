"""Reading a perf ring in overwrite mode (``write_backward``): the flight recorder of
:meth:`ringtool.readers.perfbuf.PerfBuffer.snapshot`. Layout:
:mod:`ringtool.protocol.perf_layout`."""

from __future__ import annotations

from typing import Protocol

from ringtool.errors import CorruptRecordError
from ringtool.protocol.perf_layout import HEADER_SIZE, PERF_RECORD_SAMPLE, RAW_OFF, UserPage


class BackwardRing(Protocol):
    """What the backward walk needs of a ring (:class:`ringtool.protocol.perf.PerfRing`
    is one): its user page, its data size, reads that may wrap, and the error for a
    record that cannot be."""

    page: UserPage
    size: int

    def read_bytes(self, pos: int, n: int) -> bytes: ...
    def corrupt(self, why: str, pos: int) -> CorruptRecordError: ...


def read_backward(ring: BackwardRing) -> list[bytes]:
    """The payloads in a *paused* write_backward ring, oldest first.

    The kernel writes records downwards: ``data_head`` is the newest record and older
    ones follow it. Walk up from ``data_head`` until a zero header (never written) or
    a whole ring's worth; a record that would cross the ring's end was partly
    overwritten and is dropped (tools/perf backward_rb_find_range). Other records
    (LOST after a pause, ...) are skipped, not counted: nothing is consumed here, so
    the next snapshot sees them again.
    """
    head = ring.page.data_head  # acquire (see ringtool.protocol.perf's module doc)
    pos = head
    out: list[bytes] = []
    while pos - head < ring.size:
        hdr = ring.read_bytes(pos, HEADER_SIZE)
        typ = int.from_bytes(hdr[0:4], "little")
        rsize = int.from_bytes(hdr[6:8], "little")
        if rsize == 0:
            break
        if rsize < HEADER_SIZE or rsize & 7:
            raise ring.corrupt(f"record size {rsize} in overwrite ring", pos)
        if pos + rsize - head > ring.size:
            break  # its start was overwritten by newer data
        if typ == PERF_RECORD_SAMPLE and rsize >= 16:
            body = ring.read_bytes(pos, rsize)
            raw = min(int.from_bytes(body[8:12], "little"), rsize - RAW_OFF)
            out.append(body[RAW_OFF : RAW_OFF + raw])
        pos += rsize
    out.reverse()
    return out


__all__ = ["read_backward"]
