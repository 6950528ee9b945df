"""The exported message format, version 1: many events of one lane per message.

A *lane* is one (CPU, event type) of one exporter run. The exporter numbers each
lane's events 1, 2, 3, ... in the order the CPU's ring delivered them; a message holds
a contiguous range of one lane, so a reader can tell from the numbers alone what it
has, what is missing (the exporter could not send it: ``export_dropped``) and what it
has twice. Subject: ``<prefix>.<host>.<type>`` (``ringtool.web1.open``).

Every message carries NATS headers (the body is events only):

==========================  =======================================================
``Nats-Msg-Id``             ``<host>:<run>:<mac>``, ``mac`` keyed by a per-run secret
                            (:meth:`Origin.msg_id`): JetStream drops a resend with an
                            id it stored within its duplicate window
``Ringtool-Format``         ``jsonl/1``, ``rows/1`` or ``stats/1``
``Ringtool-Host``           the ``--host-name`` (default: the host name)
``Ringtool-Boot``           ``/proc/sys/kernel/random/boot_id`` of the exporting host
``Ringtool-Run``            random id of the exporting process run (sequences restart)
``Ringtool-Source``         ``trace`` or ``bridge``
``Ringtool-Type``           event type (``exec`` ``exit`` ``fork`` ``open`` ``syscall`` ``net``)
``Ringtool-Cpu``            the CPU whose ring the events came from
``Ringtool-Seq``            ``first-last``: the lane's sequence numbers, inclusive
``Ringtool-Realtime-Offset``  ns to add to a kernel (CLOCK_MONOTONIC) stamp for wall time
``Ringtool-Data-Len``       ``rows/1`` only: bytes kept of the trailing ``data`` field
==========================  =======================================================

Bodies:

* ``jsonl/1`` (default): the event lines exactly as ``ringtool trace --json`` writes
  them, one per event in sequence order, each ending in ``\\n`` (``bridge``: ``type``,
  ``ts``, ``cpu``, ``origin`` and the fields :mod:`ringtool.kmes.events` decodes).
* ``rows/1``: the records as ``bpf/trace_event.h`` declares them (the numpy dtype of
  :mod:`ringtool.event.layout`: the single definition), ``count`` rows back to back,
  each cut after ``Ringtool-Data-Len`` bytes of its last field ``data`` (a multiple
  of 8 that holds the batch's longest string and its NUL; the 8-byte words after the
  one holding a string's NUL are zeroed). A reader pads the rows back to the full
  record with zeros and reads ``data`` up to the NUL. For ``net``: per sample a little-endian
  u32 length, then ``struct trace_net`` + packet bytes.
* ``stats/1``: one JSON object, the exporter's counters (``kind`` ``stats`` or, last,
  ``summary``) on subject ``<prefix>.<host>.stats``.

Reading them back: :mod:`ringtool.export.reading`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.errors import ExportError
from ringtool.event.decode import Decoder
from ringtool.event.json_lines import batch_text
from ringtool.event.records import NetRecords, Records

JSONL = "jsonl/1"
ROWS = "rows/1"
STATS = "stats/1"
EVENT_FORMATS = {"json": JSONL, "rows": ROWS}
STATS_KIND = "stats"
#: JetStream's default max_payload is 1 MiB: stay below it with room for headers.
MAX_BODY = 900 * 1024
#: ``rows/1`` net bodies: the length before each sample
SAMPLE_LEN = struct.Struct("<I")

H_ID = "Nats-Msg-Id"
H_FORMAT = "Ringtool-Format"
H_HOST = "Ringtool-Host"
H_BOOT = "Ringtool-Boot"
H_RUN = "Ringtool-Run"
H_SOURCE = "Ringtool-Source"
H_TYPE = "Ringtool-Type"
H_CPU = "Ringtool-Cpu"
H_SEQ = "Ringtool-Seq"
H_CLOCK = "Ringtool-Realtime-Offset"
H_DATA_LEN = "Ringtool-Data-Len"


@dataclass(frozen=True)
class Origin:
    """Who exports: the same for every message of one run. ``id_key``: this run's
    secret (never sent) that makes its ``Nats-Msg-Id`` values unguessable
    (:meth:`msg_id`)."""

    host: str
    boot: str
    run: str
    source: str
    realtime_offset_ns: int
    id_key: bytes = field(default_factory=lambda: secrets.token_bytes(16), repr=False)

    def msg_id(self, what: str) -> str:
        """The ``Nats-Msg-Id`` of this run's message ``what`` (``open:3:2049``,
        ``stats:7``): ``<host>:<run>:`` and an HMAC-SHA256 of ``what`` under
        ``id_key``. The stream's duplicate window is stream-wide, so an id another
        member could predict would let it publish that id first and have the real
        message dropped as a duplicate; ids already stored tell nothing of the next."""
        mac = hmac.new(self.id_key, what.encode(), hashlib.sha256).hexdigest()[:32]
        return f"{self.host}:{self.run}:{mac}"


class Lines(list[str]):
    """Events already rendered as JSON lines (the bridge's): a batch's ``data``."""


@dataclass
class Batch:
    """``count`` events of lane (``cpu``, ``type``) numbered ``first`` ...
    ``first + count - 1``. ``data``: a ``struct trace_event`` array, or for ``net`` the
    packets (:class:`~ringtool.event.records.NetRecords`, an owned copy)."""

    cpu: int
    type: str
    first: int
    count: int
    data: Any
    nbytes: int

    @property
    def last(self) -> int:
        return self.first + self.count - 1


@dataclass
class Message:
    """One NATS message ready to publish (kept as is for a resend)."""

    subject: str
    headers: dict[str, str]
    body: bytes
    cpu: int = -1
    count: int = 0
    #: times it was handed to the connection (the publisher's bookkeeping)
    sends: int = 0

    @property
    def msg_id(self) -> str:
        return self.headers[H_ID]


_LO = np.uint64(0x0101010101010101)
_HI = np.uint64(0x8080808080808080)


def compact_rows(arr: np.ndarray[Any, Any], min_len: Any = None) -> tuple[int, bytes]:
    """``(data_len, body)`` of ``rows/1`` for a ``struct trace_event`` array.

    Works on 8-byte words of ``data`` (a multiple of 8 bytes at an 8-aligned offset,
    as the header lays it out): per row the first word holding a NUL byte (the
    classic ``(w - 0x01..) & ~w & 0x80..`` test: exact for the first zero byte of a
    word, which is all that is asked) ends the string; the words after it
    are zeroed (the kernel leaves stale bytes there) and every row is cut after the
    longest string's last word, so ``data_len`` is a multiple of 8. ``min_len``: per
    row (or one number for all), the bytes of ``data`` kept even past its first NUL
    (an exec record's arguments follow its filename: :func:`exec_min_len`; a record of a
    struct of its own, such as tcp's, its fields:
    :meth:`ringtool.event.layout.TraceLayout.data_kept`)."""
    size = arr.dtype.itemsize
    off = arr.dtype.fields["data"][1]  # type: ignore[index]
    n = len(arr)
    if n == 0:
        return 0, b""
    rows = np.ascontiguousarray(arr).view(np.uint8).reshape(n, size)
    words = rows[:, off:].view("<u8")
    # word by word from the start, only as far as the longest string goes: paths are
    # short, and no temporary of the whole field is made (those cost page faults)
    first = np.full(n, words.shape[1] - 1)
    pending = np.ones(n, bool)
    for k in range(words.shape[1]):
        col = words[:, k]
        hit = ((col - _LO) & ~col & _HI) != 0
        hit &= pending
        first[hit] = k
        pending &= ~hit
        if not pending.any():
            break
    if min_len is not None:
        first = np.maximum(first, (np.asarray(min_len, np.int64) - 1) // 8)
    keep_words = int(first.max()) + 1
    out = rows[:, : off + 8 * keep_words].copy()
    kept = out[:, off:].view("<u8")
    kept[np.arange(keep_words) > first[:, None]] = 0
    return 8 * keep_words, out.tobytes()


def exec_min_len(arr: np.ndarray[Any, Any]) -> list[int]:
    """Per exec record of ``arr``: the bytes of ``data`` its filename and arguments use
    (:func:`ringtool.event.exec_data.used_len`)."""
    from ringtool.event.exec_data import used_len

    return [used_len(d, a) for d, a in zip(arr["data"].tolist(), arr["aux2"].tolist(), strict=True)]


def expand_rows(body: bytes, count: int, data_len: int, dtype: np.dtype[Any]) -> Any:
    """The ``struct trace_event`` array of a ``rows/1`` body (zero-padded rows)."""
    off = dtype.fields["data"][1]  # type: ignore[index]
    width = off + data_len
    if not 0 <= data_len <= dtype.itemsize - off or len(body) != count * width:
        raise ExportError(
            f"rows/1 body of {len(body)} bytes does not hold {count} rows of {width} bytes"
        )
    rows = np.zeros((count, dtype.itemsize), np.uint8)
    rows[:, :width] = np.frombuffer(body, np.uint8).reshape(count, width)
    return rows.view(dtype).reshape(count)


def json_lines(decoder: Decoder, records: Records) -> bytes:
    """What ``trace --json`` prints for ``records`` (its JsonOutput), as bytes."""
    return batch_text(decoder, records, None).encode()


def net_rows(net: NetRecords) -> bytes:
    """The ``rows/1`` body of packets: per sample its length (:data:`SAMPLE_LEN`),
    then the sample (``struct trace_net`` + packet bytes), gathered with numpy."""
    size, k = net.size, SAMPLE_LEN.size
    total = int(size.sum())
    at = np.cumsum(size + k) - size - k  # where each sample's length goes in the body
    body = np.empty(total + k * len(size), np.uint8)
    lens = size.astype("<u4").view(np.uint8)  # each length's k little-endian bytes
    body[(at[:, None] + np.arange(k)).reshape(-1)] = lens
    within = np.arange(total) - np.repeat(np.cumsum(size) - size, size)  # byte no. in its sample
    body[np.repeat(at + k, size) + within] = np.frombuffer(net.data, np.uint8)[
        np.repeat(net.start, size) + within
    ]
    return body.tobytes()


class Encoder:
    """Turns :class:`Batch` es into :class:`Message` s of one format for one origin."""

    def __init__(
        self, origin: Origin, fmt: str, prefix: str, decoder: Decoder, max_body: int = MAX_BODY
    ) -> None:
        if fmt not in EVENT_FORMATS:
            raise ExportError(f"--export-format {fmt!r}: choose from {', '.join(EVENT_FORMATS)}")
        self.origin = origin
        self.format = EVENT_FORMATS[fmt]
        self.prefix = prefix
        self.decoder = decoder
        self.max_body = max_body
        self._empty = np.empty(0, decoder.layout.event)

    def headers(self, kind: str, fmt: str, extra: dict[str, str]) -> dict[str, str]:
        o = self.origin
        return {H_FORMAT: fmt, H_HOST: o.host, H_BOOT: o.boot, H_RUN: o.run,
                H_SOURCE: o.source, H_TYPE: kind, **extra}  # fmt: skip

    def encode(self, batch: Batch) -> list[Message]:
        """The messages of ``batch`` (more than one when the body would pass
        ``max_body``: the range is split, never the numbering)."""
        body, extra = self._body(batch)
        if len(body) > self.max_body and batch.count > 1:
            half = batch.count // 2
            return [*self.encode(_slice(batch, 0, half)),
                    *self.encode(_slice(batch, half, batch.count))]  # fmt: skip
        o = self.origin
        extra.update({
            H_ID: o.msg_id(f"{batch.type}:{batch.cpu}:{batch.first}"),
            H_CPU: str(batch.cpu), H_SEQ: f"{batch.first}-{batch.last}",
            H_CLOCK: str(o.realtime_offset_ns),
        })  # fmt: skip
        headers = self.headers(batch.type, self.format, extra)
        subject = f"{self.prefix}.{o.host}.{batch.type}"
        return [Message(subject, headers, body, batch.cpu, batch.count)]

    def _body(self, batch: Batch) -> tuple[bytes, dict[str, str]]:
        if isinstance(batch.data, Lines):
            return "".join(line + "\n" for line in batch.data).encode(), {}
        if batch.type == "net":
            if self.format == JSONL:
                return json_lines(self.decoder, Records(self._empty, batch.data)), {}
            return net_rows(batch.data), {}
        if self.format == JSONL:
            return json_lines(self.decoder, Records(batch.data)), {}
        min_len: Any = (exec_min_len(batch.data) if batch.type == "exec"
                        else self.decoder.layout.data_kept(batch.type))  # fmt: skip
        keep, body = compact_rows(batch.data, min_len)
        return body, {H_DATA_LEN: str(keep)}

    def stats(self, record: dict[str, Any], number: int) -> Message:
        """A ``stats/1`` message (the ``number`` th of this run)."""
        o = self.origin
        headers = self.headers(STATS_KIND, STATS, {H_ID: o.msg_id(f"stats:{number}")})
        body = json.dumps(record, separators=(",", ":")).encode()
        return Message(f"{self.prefix}.{o.host}.{STATS_KIND}", headers, body)


def _slice(batch: Batch, start: int, stop: int) -> Batch:
    data = batch.data[start:stop]
    if isinstance(batch.data, Lines):
        data = Lines(data)
    nbytes = batch.nbytes * (stop - start) // max(batch.count, 1)
    return Batch(batch.cpu, batch.type, batch.first + start, stop - start, data, nbytes)


__all__ = [
    "EVENT_FORMATS",
    "JSONL",
    "MAX_BODY",
    "ROWS",
    "SAMPLE_LEN",
    "STATS",
    "Batch",
    "Encoder",
    "Lines",
    "Message",
    "Origin",
    "compact_rows",
    "exec_min_len",
    "expand_rows",
    "json_lines",
]
