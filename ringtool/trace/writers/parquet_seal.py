"""A closed partition file of ``collect --record`` turned into Parquet (docs/record.md).

An Arrow IPC stream is what a writer can be killed in the middle of (every batch is
whole on disk before the next begins), but Spark, Trino's Hive connector and DuckDB
itself (without an extension) do not read it. Parquet they read, with the partition
columns from the directory names; but a Parquet file is readable only once its footer
is written, at its close. So a partition file is written as a stream and, once
closed (its end marker, its summary), :func:`seal` reads it back (every batch
checked: :class:`~ringtool.event.recording.RecordingReader`), writes the same rows
as Parquet to a new 0600 file under a temporary name (zstd, page checksums), syncs
it, renames it to ``<name>.parquet`` and removes the stream. A collector killed at
any point leaves the stream, the Parquet file, or both whole (a reader prefers the
Parquet file: :func:`sealed_twin`); never a half-written Parquet file under its name.

The Parquet file keeps the stream's schema metadata (host, run, layout...) and its
summary (``ringtool.summary``); ``time`` is stored in microseconds (the engines that
read Parquet's nanosecond timestamps are fewer), ``ts`` keeps the nanoseconds, and
:func:`read_sealed` makes ``time`` from ``ts`` again, to the nanosecond.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ringtool.errors import RecordingError
from ringtool.event.arrow_records import TIME, RecordSchema
from ringtool.event.recording import RecordingReader
from ringtool.export.partitions import SEALED_SUFFIX, STREAM_SUFFIX
from ringtool.trace.writers.private_file import write_replacing

#: The key of the summary in a sealed file's metadata.
SUMMARY_KEY = b"ringtool.summary"
#: Rows per Parquet row group.
ROW_GROUP = 1 << 17


def sealed_name(name: str) -> str:
    """``<stem>.parquet`` of a stream ``<stem>.arrows``."""
    return name[: -len(STREAM_SUFFIX)] + SEALED_SUFFIX


def sealed_twin(path: Path) -> bool:
    """Whether stream ``path`` has its Parquet file beside it (a seal stopped between
    the rename and the removal: the stream is the same rows again)."""
    return path.suffix == STREAM_SUFFIX and path.with_suffix(SEALED_SUFFIX).exists()


def seal(dir_fd: int, name: str, schema: RecordSchema, shown: Path) -> str:
    """Stream ``name`` of directory ``dir_fd`` as Parquet (see the module doc); the new
    file's name. A RecordingError when the stream does not read back whole, a
    UsageError (naming ``--record`` and ``shown``) when the file cannot be written:
    the stream stays either way."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        reader = RecordingReader(Path(f"/proc/self/fd/{fd}"), schema)
        batches = [b for b, _ in reader.batches()]
    finally:
        os.close(fd)
    rec = reader.recording
    meta = {k.encode(): v.encode() for k, v in rec.meta.items()}
    meta[SUMMARY_KEY] = json.dumps(rec.summary, separators=(",", ":")).encode()
    table = pa.Table.from_batches(batches, schema.schema).replace_schema_metadata(meta)
    final = sealed_name(name)
    tmp = f".{final}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)  # a seal killed before its rename
    write_replacing(dir_fd, final, tmp, lambda f: pq.write_table(
        table, f, compression="zstd", row_group_size=ROW_GROUP, coerce_timestamps="us",
        allow_truncated_timestamps=True, write_page_checksum=True), shown, "--record")  # fmt: skip
    os.unlink(name, dir_fd=dir_fd)
    return final


def read_sealed(path: Path, schema: RecordSchema) -> tuple[pa.Table, dict[str, str], object]:
    """A sealed file's rows (as the stream's schema: ``time`` in ns again), its
    metadata (text) and its summary; a RecordingError when it is not one."""
    try:
        table = pq.read_table(path, page_checksum_verification=True)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise RecordingError(f"{path}: not a sealed partition file (Parquet): {exc}") from None
    raw = table.schema.metadata or {}
    meta = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in raw.items()
            if k != SUMMARY_KEY and not k.startswith(b"ARROW")}  # fmt: skip
    try:
        summary = json.loads(raw.get(SUMMARY_KEY, b"null"))
        if TIME in table.column_names:  # stored in us (module doc): again from ts, in ns
            offset = int(meta.get("realtime_offset_ns", "0"))
            ns = pc.add(table["ts"].cast(pa.int64()), offset)
            at = table.column_names.index(TIME)
            table = table.set_column(at, TIME, ns.cast(schema.schema.field(TIME).type))
        schema.check_schema(table.schema)
        cols = [table[f.name] if f.name in table.column_names
                else pa.nulls(len(table), f.type) for f in schema.schema]  # fmt: skip
    except (ValueError, pa.ArrowException) as exc:
        raise RecordingError(f"{path}: its columns are not a recording's: {exc}") from None
    return pa.Table.from_arrays(cols, schema=schema.schema), meta, summary


__all__ = ["ROW_GROUP", "SUMMARY_KEY", "read_sealed", "seal", "sealed_name", "sealed_twin"]
