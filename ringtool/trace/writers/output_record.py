"""``ringtool trace --record FILE``: every record, and the run's accounting, into a
recording (an Arrow IPC stream: :mod:`ringtool.event.recording`, docs/record.md).

A :class:`~ringtool.trace.sink.Sink` beside any output: the batches the loop hands on
are kept (copied once, into one buffer) and written together as one record batch of
the file (columns built from the numpy records, no Python per record) every
:data:`FLUSH_EVENTS` events or :data:`FLUSH_S` seconds, before packets and at each
tick; each interval's statistics are one ``stats`` message, the final ones the
``summary``. The schema's metadata says what ran where: host, kernel, machine, boot
time, the layout's version, the command line, the clock offset of the timestamps.

The file is created 0600 without following a symlink
(:func:`ringtool.trace.writers.private_file.open_private`, as ``--pcap``). With
``--record-rotate`` the recording is parts ``STEM.0001.SUFFIX``, ``STEM.0002.SUFFIX``
... each a whole stream; a part ends (a ``rotate`` message, its end marker) once it
holds the size or has been written for the time given, and the next begins.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ringtool import __version__
from ringtool.errors import RingtoolError, UsageError
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.decode import Decoder
from ringtool.event.recording import ROTATE, STATS, SUMMARY, RecordingWriter, layout_meta
from ringtool.event.records import NetRecords, Records, copy_records
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import stats_record, summary_record
from ringtool.trace.writers.private_file import open_private


@dataclass(frozen=True)
class Rotate:
    """``--record-rotate``: a part ends at ``bytes`` (None: any size) or after
    ``seconds`` (None: any time)."""

    bytes: int | None = None
    seconds: float | None = None


#: A record batch of the file holds the events of the trace's reads until it has this
#: many, or its first is this old (s), or a tick or packets come: few fixed costs per
#: event, and a killed recorder loses at most that much (docs/record.md).
FLUSH_EVENTS = 16384
FLUSH_S = 0.25


def boot_time() -> int:
    """The boot time, UNIX seconds (``btime`` of ``/proc/stat``; 0: unknown)."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("btime "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_meta(offset_ns: int) -> dict[str, str]:
    """The schema metadata of a recording made now (see the module doc)."""
    u = os.uname()
    return {
        "ringtool.version": __version__,
        **layout_meta(),
        "host": socket.gethostname(),
        "kernel": u.release,
        "arch": u.machine,
        "boot_time": str(boot_time()),
        "realtime_offset_ns": str(offset_ns),
        "argv": json.dumps(sys.argv),
        "started": f"{time.time():.3f}",
        "run_id": uuid.uuid4().hex,
    }


def part_path(path: Path, part: int) -> Path:
    """Part ``part`` (from 1) of a rotated recording ``path``: ``STEM.NNNN.SUFFIX``."""
    return path.with_name(f"{path.stem}.{part:04d}{path.suffix}")


class RecordSink:
    """The recording (see the module doc). :meth:`open` creates the file before the
    sources load (a path that cannot be used is a UsageError naming ``--record``); a
    write that fails later is a RingtoolError naming it."""

    def __init__(
        self, path: Path, decoder: Decoder, *, force: bool = False, rotate: Rotate | None = None
    ) -> None:
        self.path = path
        self.force = force
        self.rotate = rotate
        self.schema = RecordSchema(decoder.layout)
        self.offset_ns = decoder.offset_ns
        self.meta = run_meta(self.offset_ns)
        self.part = 0
        self.parts: list[Path] = []
        self._last_stats: dict[str, object] = {}
        #: the events kept, copied once into a buffer of :data:`FLUSH_EVENTS`:
        #: ``_pending[:_pending_n]``
        self._pending: np.ndarray[Any, Any] = np.empty(FLUSH_EVENTS, decoder.layout.event)
        self._pending_n = 0
        self._since = 0.0
        self._writer = self._open_part(self._open_file(1))

    def _open_file(self, part: int) -> BinaryIO:
        """Part ``part``'s file, created (a UsageError naming ``--record`` when it
        cannot be: the part before it stays the writer, whole)."""
        path = part_path(self.path, part) if self.rotate is not None else self.path
        return open_private(path, force=self.force, flag="--record")

    def _open_part(self, f: BinaryIO) -> RecordingWriter:
        """The next part's writer on ``f`` (its header written); a UsageError naming
        ``--record`` when that fails (``f`` closed, the part number unchanged)."""
        part = self.part + 1
        path = part_path(self.path, part) if self.rotate is not None else self.path
        try:
            writer = RecordingWriter(f, self.schema, {**self.meta, "part": str(part)},
                                     self.offset_ns)  # fmt: skip
        except OSError as exc:
            with contextlib.suppress(OSError):
                f.close()
            raise UsageError(f"--record {path}: {exc.strerror or exc}") from None
        self.part = part
        self.parts.append(path)
        self._part_start = time.monotonic()
        return writer

    def _due(self) -> bool:
        r = self.rotate
        if r is None:
            return False
        return (r.bytes is not None and self._writer.size >= r.bytes) or (
            r.seconds is not None and time.monotonic() - self._part_start >= r.seconds
        )

    def publish(self, records: Records) -> None:
        """Keep the batch's events (copied: the loop consumes them after the call);
        write what is kept once it holds :data:`FLUSH_EVENTS` or is :data:`FLUSH_S`
        old, or the batch has packets (written with the events before them: the
        live order, events of each read then its packets). A read of
        :data:`FLUSH_EVENTS` or more is written as it comes, after what is kept."""
        n, k = len(records.events), self._pending_n
        if k and k + n > len(self._pending):
            self._flush()
            k = 0
        if n >= len(self._pending):
            self._write(records)
            return
        if n:
            if not k:
                self._since = time.monotonic()
            copy_records(self._pending[k : k + n], records.events)
            self._pending_n = k = k + n
        if (len(records.net) or k >= FLUSH_EVENTS
                or (k and time.monotonic() - self._since >= FLUSH_S)):  # fmt: skip
            self._flush(records.net)

    def _flush(self, net: NetRecords | None = None) -> None:
        """Write what is kept (and ``net`` after it)."""
        events = self._pending[: self._pending_n]  # written before the buffer is reused
        self._pending_n = 0
        self._write(Records(events, net) if net is not None and len(net) else Records(events))

    def _write(self, batch: Records) -> None:
        """One record batch of the file; a new part when one is due."""
        if not len(batch):
            return
        try:
            self._writer.write(batch)
            if self._due():  # the next part first (its file and header): if it cannot
                # be made, this part stays the writer and ends the run whole
                old, nxt = self._writer, self.part + 1
                self._writer = self._open_part(self._open_file(nxt))
                old.account(ROTATE, {"next_part": nxt, **self._last_stats})
                old.close()
        except OSError as exc:
            raise RingtoolError(f"--record {self.parts[-1]}: {exc.strerror or exc}") from None

    def tick(self, stats: TraceStats) -> list[str]:
        """What is kept, then the interval's statistics."""
        self._flush()
        record = stats_record(stats)
        self._last_stats = {"stats": record}
        try:
            self._writer.account(STATS, record)
        except OSError as exc:
            raise RingtoolError(f"--record {self.parts[-1]}: {exc.strerror or exc}") from None
        return []

    def close(self, stats: TraceStats | None) -> None:
        """What is kept, the summary (when the run has statistics), the end marker, the
        file closed."""
        try:
            self._flush()
            if stats is not None:
                self._writer.account(SUMMARY, summary_record(stats))
        except OSError as exc:
            raise RingtoolError(f"--record {self.parts[-1]}: {exc.strerror or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                self._writer.close()


__all__ = ["FLUSH_EVENTS", "FLUSH_S", "RecordSink", "Rotate", "boot_time", "part_path", "run_meta"]
