"""The recording file: trace records as an Apache Arrow IPC stream (docs/record.md).

A recording is one Arrow IPC *stream* (the "Streaming format" of the Arrow columnar
format specification): the schema (the columns of
:class:`~ringtool.event.arrow_records.RecordSchema`, and the run's description as the
schema's key-value metadata: :data:`META_KEYS`), then one record batch per batch of
the trace, then an end-of-stream marker. Every message is whole on disk before the
next begins (the writer flushes each), so a recorder killed at any point leaves a file
that reads back to its last whole batch. Batches are compressed (LZ4 buffers).

Besides the records, empty batches carry the run's accounting in their custom
metadata (``ringtool.kind``: ``start`` first (so the schema is on disk at once),
``stats`` once per interval, ``summary`` at the end, as
the JSON objects ``--json`` prints; ``rotate`` when the next part of a rotated
recording follows): a standard reader sees them as zero rows.

:class:`RecordingReader` reads a file back, message by message: a damaged or cut
message is a :class:`~ringtool.errors.RecordingError` (a file without its
end-of-stream marker a :class:`~ringtool.errors.RecordingTruncated`) naming the byte
and the batch where it stops, raised after every whole batch before it was handed on.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.ipc as ipc

from ringtool.errors import InputFileError, RecordingError, RecordingTruncated, UsageError
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.layout import TRACE_HEADER, parse_layout
from ringtool.event.recording_check import PENDING, ColumnsSum, MessageSum, records_digest
from ringtool.event.records import Records
from ringtool.kernel.files import open_regular

#: The recording format's version (``ringtool.format``) this ringtool writes, and those
#: it reads (a reader refuses another by name): 3 checks each batch by a sum over its
#: bytes on disk (:data:`SUM`), 2 by a sum over its columns (the same key), 1 by a sum
#: over its records (:data:`DIGEST`).
FORMAT = "3"
READS = ("1", "2", "3")
#: The key of a message's kind in its custom metadata, and of its JSON body; of a
#: record batch's checksum (format 3: :class:`~ringtool.event.recording_check.MessageSum`;
#: format 2: :class:`~ringtool.event.recording_check.ColumnsSum`;
#: format 1: :func:`~ringtool.event.recording_check.records_digest`).
KIND, BODY = b"ringtool.kind", b"ringtool.json"
SUM, DIGEST = b"ringtool.sum", b"ringtool.digest"
#: The kinds of accounting messages.
START, STATS, SUMMARY, ROTATE = "start", "stats", "summary", "rotate"
#: The schema's metadata: format, layout, and what ran where (all text).
META_KEYS = (
    "ringtool.format",
    "ringtool.version",
    "layout_sha256",
    "layout_types",
    "host",
    "kernel",
    "arch",
    "boot_time",
    "realtime_offset_ns",
    "argv",
    "started",
    "run_id",
    "part",
)
#: The buffers' compression (each message says its own: a reader reads either):
#: LZ4 frames, about three times as fast to write as zstd's for twice the bytes
#: (docs/record.md, "Measured"); compressed on the calling thread (a pool's threads
#: would cost the process as much CPU, and their hand-offs more).
COMPRESSION = "lz4"
#: The native buffer a message is gathered in before it is written (grows past it).
MESSAGE_BUFFER = 1 << 20
#: The end-of-stream marker of the IPC stream format (continuation, zero length).
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def layout_digest(header_text: str) -> str:
    """The layout's version: the SHA-256 of ``bpf/trace_event.h``'s text."""
    return hashlib.sha256(header_text.encode()).hexdigest()


class _Gathered(io.RawIOBase):
    """The bytes a native buffer hands on, kept until :meth:`take` (never failing)."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self._parts.append(bytes(b))
        return len(self._parts[-1])

    def take(self) -> bytes:
        """What was handed on since the last call."""
        out = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts = []
        return out


class RecordingWriter:
    """Writes one recording to ``stream`` (opened by the caller, binary; closed by
    :meth:`close`). ``meta``: the schema metadata (:data:`META_KEYS`; ``ringtool.format``
    is set here). Each call writes whole messages and flushes."""

    def __init__(
        self, stream: BinaryIO, schema: RecordSchema, meta: Mapping[str, str], offset_ns: int
    ) -> None:
        self.stream = stream
        self.schema = schema
        self.offset_ns = offset_ns
        full = {**meta, "ringtool.format": FORMAT}
        self._empty = pa.record_batch(
            [pa.array([], f.type) for f in schema.schema], schema=schema.schema
        )
        # the IPC writer's many small writes (a few a column) gathered natively and
        # written to ``stream`` in one call a message (each of its writes to a Python
        # file is a call into Python: about 8 ns an event); ``stream``'s errors come
        # from that call, not from within Arrow's
        self._gathered = _Gathered()
        self._out = pa.BufferedOutputStream(pa.PythonFile(self._gathered, mode="w"),
                                            MESSAGE_BUFFER)  # fmt: skip
        self._w = ipc.new_stream(
            self._out,
            schema.schema.with_metadata(full),
            options=ipc.IpcWriteOptions(compression=COMPRESSION, use_threads=False),
        )
        self.batches = 0
        self._sum = MessageSum()
        self.events = 0
        self.account(START, {})  # the schema is written with the first message: now

    def write(self, records: Records) -> None:
        """One batch of records (nothing for an empty one)."""
        if not len(records):
            return
        batch = self.schema.to_arrow(records, self.offset_ns)
        self._w.write_batch(batch, custom_metadata={SUM: PENDING})
        self._flush(sealed=True)
        self.batches += 1
        self.events += len(records)

    def account(self, kind: str, body: Mapping[str, Any]) -> None:
        """An accounting message: ``kind`` (:data:`STATS`, :data:`SUMMARY`,
        :data:`ROTATE`) and its JSON object."""
        meta = {KIND: kind.encode(), BODY: json.dumps(body, separators=(",", ":")).encode()}
        self._w.write_batch(self._empty, custom_metadata=meta)
        self._flush()

    def _flush(self, *, sealed: bool = False) -> None:
        """What the IPC writer wrote, to ``stream`` (one call), then to its file;
        ``sealed``: a batch's, its checksum put in it first (the sum of those bytes)."""
        self._out.flush()
        message: bytes | bytearray = self._gathered.take()
        if sealed:
            self._sum.seal(message := bytearray(message))
        self.stream.write(message)
        self.stream.flush()

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self.stream.tell()

    def close(self) -> None:
        """The end-of-stream marker, then the file closed."""
        try:
            self._w.close()
            self._flush()
        finally:
            self.stream.close()


@dataclass
class Recording:
    """What a file says of its run: the schema metadata (text) and the accounting read
    so far (the last ``stats`` object, the ``summary``, whether a next part follows)."""

    path: str
    meta: dict[str, str]
    missing: list[str] = field(default_factory=list)
    stats: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    rotated: bool = False
    batches: int = 0
    events: int = 0

    @property
    def offset_ns(self) -> int:
        return int(self.meta.get("realtime_offset_ns", "0"))


class RecordingReader:
    """Reads ``path`` (see the module doc); :meth:`records` yields its batches.
    ``on_account`` (None: nothing) is given each accounting message as it is read,
    ``(kind, body)``, before the batch after it is handed on."""

    def __init__(self, path: Path, schema: RecordSchema) -> None:
        self.path = path
        self.schema = schema
        self.on_account: Callable[[tuple[str, dict[str, Any]]], None] | None = None
        try:  # a FIFO or device is refused before it is opened (it could block)
            fd = open_regular(path)
        except InputFileError as exc:
            raise UsageError(f"{path}: {exc.why}") from None
        except OSError as exc:
            raise RecordingError(f"{path}: {exc.strerror or exc}") from None
        try:
            if os.fstat(fd).st_size == 0:  # also /proc's files: some block a read (kmsg)
                raise RecordingError(
                    f"{path}: not a ringtool recording (an Arrow IPC stream): the file is empty"
                )
            # the checked file itself, as pyarrow's own file (it reads fastest)
            self._file = pa.OSFile(f"/proc/self/fd/{fd}", "rb")
        except (OSError, pa.ArrowException) as exc:
            raise RecordingError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
        finally:
            os.close(fd)
        self.size = self._file.size()
        self._pos = 0
        self._sum, self._message_sum = ColumnsSum(), MessageSum()
        try:
            self._reader = ipc.open_stream(self._file)
        except (OSError, pa.ArrowException, MemoryError, ValueError) as exc:
            self._file.close()
            raise RecordingError(
                f"{path}: not a ringtool recording (an Arrow IPC stream): {_why(exc)}"
            ) from None
        self._pos = self._file.tell()
        try:
            self.recording = self._described()
        except RecordingError:
            self._file.close()
            raise
        except (ValueError, pa.ArrowException, MemoryError) as exc:  # a damaged schema
            self._file.close()
            raise RecordingError(f"{path}: its schema is damaged: {_why(exc)}") from None

    def _described(self) -> Recording:
        """The file's description, checked: format, type numbers, columns."""
        raw = self._reader.schema.metadata or {}
        meta = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in raw.items()}
        if meta.get("ringtool.format") not in READS:
            raise RecordingError(
                f"{self.path}: recording format {meta.get('ringtool.format')!r}, "
                f"this ringtool reads {', '.join(map(repr, READS[:-1]))} and "
                f"{READS[-1]!r}: read it with "
                "the ringtool that recorded it"
            )
        self._check_types(meta)
        return Recording(str(self.path), meta, self.schema.check_schema(self._reader.schema))

    def _check_types(self, meta: Mapping[str, str]) -> None:
        try:
            types = {str(k): int(v) for k, v in json.loads(meta.get("layout_types", "{}")).items()}
        except (ValueError, AttributeError):
            types = {}
        mine = {n: t for t, n in self.schema.layout.type_names.items()}
        differ = sorted(n for n in types if mine.get(n) != types[n])
        if differ:
            raise RecordingError(
                f"{self.path}: recorded with another event layout (type "
                f"{', '.join(differ)} numbered differently): read it with "
                "the ringtool that recorded it"
            )

    def records(self) -> Iterator[Records]:
        """Each batch of records in order; the accounting messages update
        :attr:`recording`. The end of the stream is checked (see the module doc)."""
        for _, records in self.batches(convert=True):
            assert records is not None
            yield records

    def batches(self, *, convert: bool = False) -> Iterator[tuple[pa.RecordBatch, Records | None]]:
        """Each record batch as read (validated), with its records when ``convert``
        (each is converted either way: a batch whose records cannot be made is
        damaged); as :meth:`records` otherwise."""
        rec = self.recording
        try:
            while True:
                start = self._pos
                try:
                    batch, custom = self._reader.read_next_batch_with_custom_metadata()
                except StopIteration:
                    at_eos = self._file.tell()
                    break
                except (OSError, pa.ArrowException, MemoryError, ValueError) as exc:
                    raise self._stop(_why(exc)) from None
                self._pos = self._file.tell()
                if custom is not None and KIND in custom:
                    self._account(custom)
                    continue
                try:
                    batch.validate(full=True)
                    records = self._checked(batch, custom or {}, start)
                except (Exception, MemoryError) as exc:  # damaged: whatever it breaks
                    raise RecordingError(
                        f"{self.path}: batch {rec.batches + 1} (ending at byte "
                        f"{self._pos}) is damaged: {_why(exc)}"
                    ) from None
                rec.batches += 1
                rec.events += len(records)
                yield batch, records if convert else None
            if at_eos != self.size or not self._ends_with_eos():
                raise self._stop(
                    "no end-of-stream marker"
                    if at_eos == self.size
                    else f"{self.size - at_eos} bytes after the end-of-stream marker"
                )
            if rec.summary is None and not rec.rotated:
                raise self._stop("no summary")
        finally:
            self._file.close()

    def _checked(self, batch: pa.RecordBatch, custom: Mapping[bytes, bytes],
                 start: int) -> Records:  # fmt: skip
        """The batch's records, its checksum compared (its format's: see :data:`FORMAT`;
        ``start``: where its bytes begin, they end at ``_pos``)."""
        fmt = self.recording.meta.get("ringtool.format")
        if fmt == "3":
            held = self._file.read_at(self._pos - start, start)
            self._file.seek(self._pos)
            if not self._message_sum.check(held, custom.get(SUM, b"")):
                raise RecordingError("its checksum differs")
            return self.schema.from_arrow(batch)
        if fmt == "1":
            records = self.schema.from_arrow(batch)
            if custom.get(DIGEST, b"").decode(errors="replace") != records_digest(
                records, self.schema
            ):
                raise RecordingError("its checksum differs")
            return records
        if custom.get(SUM, b"").decode(errors="replace") != self._sum(batch):
            raise RecordingError("its checksum differs")
        return self.schema.from_arrow(batch)

    def _account(self, custom: Mapping[bytes, bytes]) -> None:
        kind = custom[KIND].decode(errors="replace")
        try:
            body = json.loads(custom.get(BODY, b"{}"))
        except ValueError:
            raise RecordingError(
                f"{self.path}: the {kind} message ending at byte {self._pos} is not JSON"
            ) from None
        if kind == STATS:
            self.recording.stats = body
        elif kind == SUMMARY:
            self.recording.summary = body
        elif kind == ROTATE:
            self.recording.rotated = True
        if self.on_account is not None:
            self.on_account((kind, body))

    def _ends_with_eos(self) -> bool:
        with pa.OSFile(str(self.path), "rb") as f:
            return bool(self.size >= len(EOS) and f.read_at(len(EOS), self.size - len(EOS)) == EOS)

    def _stop(self, why: str) -> RecordingTruncated:
        rec = self.recording
        return RecordingTruncated(str(self.path), rec.batches, rec.events, self._pos, why)


def _why(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def header_layout_types(header_text: str) -> str:
    """``layout_types``: the type names and their ``TRACE_*`` values, as JSON."""
    layout = parse_layout(header_text)
    return json.dumps({n: t for t, n in sorted(layout.type_names.items())})


def layout_meta() -> dict[str, str]:
    """The layout's part of the metadata (its digest and type numbers)."""
    text = TRACE_HEADER.read_text()
    return {"layout_sha256": layout_digest(text), "layout_types": header_layout_types(text)}


__all__ = ["BODY", "DIGEST", "EOS", "FORMAT", "KIND", "META_KEYS", "READS",
           "ROTATE", "START", "STATS", "SUM", "SUMMARY", "Recording",
           "RecordingReader", "RecordingWriter", "layout_digest", "layout_meta"]  # fmt: skip
