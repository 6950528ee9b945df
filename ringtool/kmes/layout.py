"""KMES ring buffer format: the metadata page and the event header, declared once.

Pure Python over buffers (``bytearray``/``memoryview``): no syscalls, so every function
here is testable on byte arrays filled by hand.

Specification: docs/kmes.md.

* Metadata page (docs/kmes.md section 3): cache line 0 static fields (bytes 0-63),
  cache line 1 producer fields (64-127), cache line 2 notification fields (128-191);
  the rest of the 4096-byte page is zero.
* Mapped layout (docs/kmes.md §2.4): metadata page, then the data region double-mapped
  (2 x capacity).
* Event header (docs/kmes.md section 4): 32 bytes, fixed.

Shared positions (write_pos, tail_pos, futex_counter, need_wake, generation) are *not*
read or written here with ``struct``: the kmes writer/reader access them with one aligned
load/store through the word indexes below (``memoryview.cast("Q")`` / ``cast("I")``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from ringtool.errors import KmesCapacityError, KmesFormatError

# --- docs/kmes.md §2.4 / §3.1: page and region sizes --------------------------------------
PAGE_SIZE = 4096  # metadata page size; data_offset equals it (docs/kmes.md §3.1)
DATA_OFFSET = PAGE_SIZE
MAGIC = b"KMESRING"  # docs/kmes.md §3.1: 4B 4D 45 53 52 49 4E 47, compared byte by byte
VERSION = 1  # docs/kmes.md §3.1: format version 1
FIRST_GENERATION = 1  # docs/kmes.md §3.4: buffers created at start are generation 1

# docs/kmes.md §10.1: powers of two from 4 KiB to 1 GiB.
MIN_CAPACITY = 1 << 12
MAX_CAPACITY = 1 << 30
DEFAULT_CAPACITY = 1 << 20  # compiled-in default (docs/kmes.md §10.1)

# --- docs/kmes.md §3.1 cache line 0: static fields (byte offsets) -------------------------
OFF_MAGIC = 0  # [u8; 8]
OFF_VERSION = 8  # u32
OFF_CPU_ID = 12  # u16
OFF_RESERVED0 = 14  # u16, zero
OFF_CAPACITY = 16  # u64
OFF_DATA_OFFSET = 24  # u64
OFF_GENERATION = 32  # u64 (bumped when the buffer is retired: docs/kmes.md §3.4)
OFF_RESERVED1 = 40  # 24 bytes, zero
# --- docs/kmes.md §3.2 cache line 1: producer fields --------------------------------------
OFF_WRITE_POS = 64  # u64, monotonic, never wraps
OFF_TAIL_POS = 72  # u64, oldest surviving event
OFF_RESERVED2 = 80  # 48 bytes, zero
# --- docs/kmes.md §3.3 cache line 2: notification fields ----------------------------------
OFF_FUTEX_COUNTER = 128  # u32 (futex(2) works on 32-bit words)
OFF_NEED_WAKE = 132  # u8, owned by consumers
OFF_RESERVED3 = 133  # 59 bytes, zero

# Word indexes for one aligned load/store through memoryview.cast("Q") / cast("I").
Q_GENERATION = OFF_GENERATION // 8
Q_WRITE_POS = OFF_WRITE_POS // 8
Q_TAIL_POS = OFF_TAIL_POS // 8
I_FUTEX_COUNTER = OFF_FUTEX_COUNTER // 4

# Static part of cache line 0 up to generation: magic, version, cpu_id, reserved0,
# capacity, data_offset (generation is written separately, as a shared word).
_STATIC = struct.Struct("<8sIHHQQ")

# --- docs/kmes.md §4.1: event header, little-endian, 32 bytes -----------------------------
# event_size u32 | event_type u16 | origin_class u8 | flags u8 | timestamp u64 | seq u64 |
# cpu_id u16 | reserved u16 | payload_len u32
EVENT_HEADER = struct.Struct("<IHBBQQHHI")
HEADER_SIZE = EVENT_HEADER.size  # 32
EVENT_ALIGN = 8  # event_size is always a multiple of 8

ORIGIN_RINGBUF = 1  # BPF ring buffer
ORIGIN_PERF = 2  # BPF perf event array
ORIGIN_BRIDGE = 3  # the bridge itself
ORIGINS = {ORIGIN_RINGBUF: "ringbuf", ORIGIN_PERF: "perf", ORIGIN_BRIDGE: "bridge"}


def check_capacity(capacity: int) -> int:
    """Return ``capacity`` if it is a power of two in [MIN_CAPACITY, MAX_CAPACITY].

    Raises :class:`KmesCapacityError` otherwise.
    """
    if not isinstance(capacity, int) or capacity <= 0 or capacity & (capacity - 1):
        raise KmesCapacityError(
            f"KMES capacity {capacity} is not a power of two (use e.g. {DEFAULT_CAPACITY} = 1 MiB)"
        )
    if not MIN_CAPACITY <= capacity <= MAX_CAPACITY:
        raise KmesCapacityError(
            f"KMES capacity {capacity} is outside [{MIN_CAPACITY}, {MAX_CAPACITY}] bytes"
        )
    return capacity


def event_size(payload_len: int) -> int:
    """Header + payload rounded up to 8 bytes (docs/kmes.md §4.2)."""
    return (HEADER_SIZE + payload_len + EVENT_ALIGN - 1) & ~(EVENT_ALIGN - 1)


def max_event_size(capacity: int) -> int:
    """Largest event the writer accepts: 50% of capacity (docs/kmes.md §6.2 step 3)."""
    return capacity // 2


def file_size(capacity: int) -> int:
    """Metadata memfd + data memfd of one CPU: page + capacity (docs/kmes.md §2.2)."""
    return PAGE_SIZE + capacity


def mapping_size(capacity: int) -> int:
    """Size of a consumer's mapping: metadata page + 2 x capacity (docs/kmes.md §2.4)."""
    return PAGE_SIZE + 2 * capacity


def init_metadata(
    meta: memoryview | bytearray, *, cpu_id: int, capacity: int, generation: int
) -> None:
    """Write a fresh metadata page (docs/kmes.md section 3) into ``meta`` (>= PAGE_SIZE bytes).

    Everything not a field (reserved fields, the rest of the page) is zeroed;
    write_pos = tail_pos = 0, futex_counter = 0, need_wake = 0. Only for a buffer no
    one has mapped yet (it uses plain stores).
    """
    check_capacity(capacity)
    try:
        meta[0:PAGE_SIZE] = bytes(PAGE_SIZE)
        _STATIC.pack_into(meta, OFF_MAGIC, MAGIC, VERSION, cpu_id, 0, capacity, DATA_OFFSET)
        struct.pack_into("<Q", meta, OFF_GENERATION, generation)
    except (TypeError, ValueError, struct.error) as exc:
        raise KmesFormatError(f"cannot write a KMES metadata page: {exc}") from None


@dataclass(frozen=True, slots=True)
class StaticFields:
    """Cache line 0 as read by a consumer (docs/kmes.md §3.1: may be cached for the
    mapping's life, except generation, which the reader re-reads as a shared word)."""

    cpu_id: int
    capacity: int
    data_offset: int
    generation: int


def read_static(meta: memoryview | bytes | bytearray) -> StaticFields:
    """Parse and validate cache line 0; raise :class:`KmesFormatError` if it is not KMES."""
    if not isinstance(meta, (bytes, bytearray, memoryview)) or len(meta) < PAGE_SIZE:
        size = len(meta) if isinstance(meta, (bytes, bytearray, memoryview)) else "not"
        raise KmesFormatError(f"KMES metadata page is {size} bytes, expected {PAGE_SIZE}")
    try:
        magic, version, cpu_id, _res0, capacity, data_offset = _STATIC.unpack_from(meta, 0)
    except (TypeError, struct.error) as exc:  # e.g. a memoryview of another format
        raise KmesFormatError(f"not a KMES metadata page: {exc}") from None
    if bytes(magic) != MAGIC:
        raise KmesFormatError(f"not a KMES ring buffer: magic {bytes(magic)!r} != {MAGIC!r}")
    if version != VERSION:
        raise KmesFormatError(f"KMES ring buffer version {version} is unsupported (want 1)")
    if data_offset != DATA_OFFSET:
        raise KmesFormatError(f"KMES data_offset {data_offset} != {DATA_OFFSET}")
    try:
        check_capacity(capacity)
    except KmesCapacityError as exc:
        raise KmesFormatError(f"bad KMES metadata: {exc}") from None
    (generation,) = struct.unpack_from("<Q", meta, OFF_GENERATION)
    return StaticFields(cpu_id, capacity, data_offset, generation)


class Event(NamedTuple):
    """One KMES event as a reader hands it out (payload copied: safe to keep)."""

    event_type: int
    origin_class: int
    flags: int
    timestamp: int
    seq: int
    cpu_id: int
    payload: bytes


def pack_event(
    buf: memoryview | bytearray,
    offset: int,
    *,
    event_type: int,
    origin_class: int,
    timestamp: int,
    seq: int,
    cpu_id: int,
    payload: bytes | bytearray | memoryview,
) -> int:
    """Write header + payload + zero padding at ``buf[offset:]``; return event_size.

    ``buf`` must hold event_size bytes from ``offset`` (the double mapping makes that
    true at any ring offset).
    """
    n = len(payload)
    size = event_size(n)
    if offset < 0 or offset + size > len(buf):
        raise KmesFormatError(f"a {size}-byte KMES event does not fit at {offset}")
    try:
        EVENT_HEADER.pack_into(
            buf, offset, size, event_type, origin_class, 0, timestamp, seq, cpu_id, 0, n
        )
    except struct.error as exc:
        raise KmesFormatError(f"cannot pack KMES event header: {exc}") from None
    end = offset + HEADER_SIZE + n
    buf[offset + HEADER_SIZE : end] = payload
    buf[end : offset + size] = bytes(size - HEADER_SIZE - n)
    return size


def header_ok(
    size: int, etype: int, origin: int, flags: int, cpu: int, res: int, plen: int,
    *, cpu_id: int, max_size: int,
) -> bool:  # fmt: skip
    """Whether an unpacked header is one the writer could have written (docs/kmes.md §4.3):
    ``event_size`` a multiple of 8 in [32, ``max_size``], ``payload_len`` fits in it,
    ``event_type`` non-zero, ``origin_class`` in {1, 2, 3}, flags and reserved zero,
    ``cpu_id`` the buffer's CPU. The one check used by :func:`unpack_event` and by
    the KMES reader (a position taken from a scribbled metadata page may point into a
    payload: this rejects anything not shaped like a header)."""
    return (
        HEADER_SIZE <= size <= max_size
        and not size & (EVENT_ALIGN - 1)
        and HEADER_SIZE + plen <= size
        and cpu == cpu_id
        and 1 <= origin <= 3
        and etype != 0
        and flags == 0
        and res == 0
    )


def unpack_event(
    buf: memoryview | bytes | bytearray, offset: int = 0, *, cpu_id: int | None = None
) -> tuple[int, Event]:
    """Parse the event at ``buf[offset:]``; return ``(event_size, Event)``.

    Raises :class:`KmesFormatError` (and nothing else) if ``buf`` is not a bytes-like
    object, ``offset`` is out of range, fewer than 32 bytes remain, the header fails
    :func:`header_ok` (``cpu_id``, when given, must match; the event must end inside
    ``buf``).
    """
    try:
        avail = len(buf) - offset
        fields = EVENT_HEADER.unpack_from(buf, offset) if offset >= 0 and avail >= 32 else None
    except (TypeError, struct.error) as exc:
        raise KmesFormatError(f"not a KMES event buffer: {exc}") from None
    if fields is None:
        raise KmesFormatError(f"KMES event header at {offset} needs 32 bytes, {avail} left")
    size, etype, origin, flags, ts, seq, cpu, res, plen = fields
    want_cpu = cpu if cpu_id is None else cpu_id
    if not header_ok(size, etype, origin, flags, cpu, res, plen, cpu_id=want_cpu, max_size=avail):
        raise KmesFormatError(
            f"bad KMES event header at {offset}: size {size}, type {etype}, origin {origin}, "
            f"flags {flags}, cpu {cpu}, reserved {res}, payload {plen}"
        )
    start = offset + HEADER_SIZE
    return size, Event(etype, origin, flags, ts, seq, cpu, bytes(buf[start : start + plen]))
