"""``ringtool collect --record DIR``: each host's events on disk, by hour (docs/record.md).

:class:`FleetRecorder` is a view of the collector (``message``/``tick``/``close``)
that writes the records of every event message it is handed into
``DIR/host=H/date=YYYY-MM-DD/hour=HH/<run>.<NNNN>.arrows``
(:mod:`ringtool.export.partitions`): a recording as ``trace --record`` writes one
(:class:`~ringtool.event.recording.RecordingWriter`, one record batch per message
and hour, flushed before the collector acknowledges the message), whose schema
metadata names the host, its run and the realtime offset. A file ends (its summary,
its end marker) when it reaches the size of ``rotate_bytes``, when nothing was written
to it for :data:`IDLE_S` (its hour is over), when more than :data:`MAX_OPEN` are open
(the least recently written), and when the collector stops; then it is sealed as
Parquet (:mod:`ringtool.trace.writers.parquet_seal`) by a thread of its own, so the
collector reads (and acknowledges) on meanwhile; :meth:`FleetRecorder.close` waits
for the seals. A killed collector leaves its open files as streams that read back to
their last whole batch (and a file it was sealing as a whole stream).

A ``rows/1`` message's records are written as the host read them; a ``jsonl/1``
message's lines (the default export format) are turned back into the records that
give those lines (:mod:`ringtool.trace.writers.fleet_lines`), so both go into one
table. A line that is not an event its record gives back exactly is not written: it is
counted, per run, in ``rejected`` by its reason (and each reason said once on
stderr); a ``--json`` line of another kind (``stats``, ``summary``, ...) in
``non_event`` by its kind.

Beside its partitions each host has ``accounting.json``: per run of the host
(``<boot>/<run>``) the events recorded here, the lines rejected and not events, and
the host's own
counters from its latest ``stats/1`` message (``exported``, ``export_dropped``,
``dropped``, ``lost``, ``events``, ``kind``: ``summary`` once the run ended), plus
this collector's ``gaps``, ``read_elsewhere`` and ``duplicates`` for the host. It is
replaced whole (a new file renamed over it) every 5 s and at the end; a later
collector on the same directory adds to the counts it finds there.

Files are created 0600 and directories 0700, each relative to its parent's descriptor
and without following a symbolic link
(:mod:`ringtool.trace.writers.private_file`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ringtool import __version__
from ringtool.errors import RecordingError, RingtoolError, UsageError
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.layout import TraceLayout
from ringtool.event.recording import SUMMARY, RecordingWriter, layout_meta
from ringtool.event.records import Records
from ringtool.event.syscalls import syscall_namer
from ringtool.export.fleet import Fleet
from ringtool.export.partitions import SEALED_SUFFIX, file_name, hour_dirs, split_by_hour
from ringtool.export.reading import Received
from ringtool.trace.writers.fleet_lines import Converted, LineRecords
from ringtool.trace.writers.parquet_seal import seal
from ringtool.trace.writers.private_file import create_at, private_dir, replace_at, subdir_at

FLAG = "--record"
#: A file nothing was written to for this long (s) is closed and sealed.
IDLE_S = 120.0
#: Files open at most (one per host, run and hour being written).
MAX_OPEN = 64
#: The accounting file of each host, beside its partitions; written every this many s.
ACCOUNTING = "accounting.json"
ACCOUNT_S = 5.0
#: Files of one run in one partition, at most (``NNNN``).
MAX_NUMBER = 9999
#: ``--record-rotate``'s default: a file's size, so sealing one takes a bounded time.
ROTATE_BYTES = 256 << 20


@dataclass
class RunBook:
    """One run of a host: events recorded here, lines not recorded (``rejected`` by
    reason, ``non_event`` by kind: :mod:`ringtool.trace.writers.fleet_lines`), and the
    counters of its latest ``stats/1`` message."""

    recorded: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    non_event: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"recorded": self.recorded, "rejected": sum(self.rejected.values()),
                "rejected_by_reason": dict(sorted(self.rejected.items())),
                "non_event": dict(sorted(self.non_event.items())), **self.stats}  # fmt: skip

    def add(self, got: Converted) -> None:
        for mine, theirs in ((self.rejected, got.rejected), (self.non_event, got.non_event)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n


@dataclass
class _Open:
    """A file being written: where, its writer, its events."""

    key: tuple[str, str, str, int]  # host, boot, run, hour
    dir_fd: int
    name: str
    shown: Path
    writer: RecordingWriter
    events: int = 0
    last: float = 0.0


class FleetRecorder:
    """See the module doc. ``root`` is opened (created 0700) at once: a directory that
    cannot be used is a UsageError naming ``--record`` before anything is read."""

    def __init__(self, root: Path, layout: TraceLayout, rotate_bytes: int | None = ROTATE_BYTES,
                 note: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.root = root
        self.schema = RecordSchema(layout)
        self.rotate_bytes = rotate_bytes
        self.note = note or (lambda text: print(f"ringtool collect: {text}", file=sys.stderr))
        self.root_fd = private_dir(root, FLAG)
        self._accounted = 0.0
        self.books: dict[str, dict[str, RunBook]] = {}
        self.dirty: set[str] = set()
        self.open: dict[tuple[str, str, str, int], _Open] = {}
        self.sealed: list[Path] = []
        self._sealer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ringtool-seal")
        self.lines = LineRecords(layout, syscall_namer())
        self._said: set[str] = set()
        self._meta = {"ringtool.version": __version__, **layout_meta(),
                      "argv": json.dumps(sys.argv)}  # fmt: skip

    # -- the collector's view --------------------------------------------------------
    def message(self, rec: Received) -> None:
        """Record one message (see the module doc)."""
        book = self._book(rec.host, f"{rec.boot}/{rec.run}")
        self.dirty.add(rec.host)
        if rec.stats is not None:
            book.stats = dict(rec.stats)
            return
        records = rec.records
        if records is None:
            got = self.lines.convert(rec.type, rec.lines, rec.offset_ns)
            book.add(got)
            for reason in got.rejected.keys() - self._said:
                self._said.add(reason)
                self.note(f"{rec.host}: a line {reason}: not recorded, counted in "
                          f"{ACCOUNTING}'s rejected_by_reason")  # fmt: skip
            records = got.records
        for hour, part in split_by_hour(records, rec.offset_ns):
            self._write((rec.host, rec.boot, rec.run, hour), part, rec.offset_ns)
            book.recorded += len(part)

    def tick(self, fleet: Fleet) -> None:
        """Close idle files; write the accounting that changed (every
        :data:`ACCOUNT_S` at most: each is a synced file)."""
        now = time.monotonic()
        for f in [f for f in self.open.values() if now - f.last >= IDLE_S]:
            self._close(f)
        if now - self._accounted >= ACCOUNT_S:
            self._account(fleet)

    def close(self, fleet: Fleet) -> None:
        """Close (and seal) every file, write every host's accounting, close the
        directories."""
        try:
            for f in list(self.open.values()):
                self._close(f)
            self.dirty.update(self.books)
            self._account(fleet)
        finally:
            self._sealer.shutdown(wait=True)
            with contextlib.suppress(OSError):
                os.close(self.root_fd)

    # -- files -----------------------------------------------------------------------
    def _host_fd(self, host: str) -> int:
        """A new descriptor of ``DIR/host=<host>`` (made 0700 when missing), the
        caller's to close: none is kept per host (a fleet has more hosts than a
        process has descriptors)."""
        return subdir_at(self.root_fd, f"host={host}", self.root / f"host={host}", FLAG)

    def _book(self, host: str, run: str) -> RunBook:
        runs = self.books.get(host)
        if runs is None:
            runs = self.books[host] = self._prior(host)
        book = runs.get(run)
        if book is None:
            book = runs[run] = RunBook()
        return book

    def _prior(self, host: str) -> dict[str, RunBook]:
        """The counts an earlier collector left in the host's accounting file (none
        when there is none; an unreadable one is said and started anew)."""
        shown = self.root / f"host={host}" / ACCOUNTING
        host_fd = self._host_fd(host)
        try:
            fd = os.open(ACCOUNTING, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=host_fd)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise UsageError(f"{FLAG} {shown}: {exc.strerror or exc}") from None
        finally:
            os.close(host_fd)
        try:
            with os.fdopen(fd, "rb") as f:
                runs = json.loads(f.read(1 << 26))["runs"]
            return {str(k): RunBook(int(v["recorded"]), _counts(v.get("rejected_by_reason")),
                                    _counts(v.get("non_event")))
                    for k, v in runs.items()}  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.note(f"{shown} is not an accounting file of ringtool: started anew")
            return {}

    def _write(self, key: tuple[str, str, str, int], part: Records, offset_ns: int) -> None:
        f = self.open.get(key)
        if f is None:
            f = self._new(key, offset_ns)
        try:
            f.writer.write(part)
        except OSError as exc:
            raise RingtoolError(f"{FLAG} {f.shown}: {exc.strerror or exc}") from None
        f.events += len(part)
        f.last = time.monotonic()
        if self.rotate_bytes is not None and f.writer.size >= self.rotate_bytes:
            self._close(f)

    def _new(self, key: tuple[str, str, str, int], offset_ns: int) -> _Open:
        """A new file for ``key``: the first number free in its partition."""
        host, boot, run, hour = key
        while len(self.open) >= MAX_OPEN:
            self._close(min(self.open.values(), key=lambda o: o.last))
        names = hour_dirs(host, hour)
        dir_fd, shown = self._host_fd(host), self.root / names[0]
        try:
            for name in names[1:]:
                shown = shown / name
                new = subdir_at(dir_fd, name, shown, FLAG)
                os.close(dir_fd)
                dir_fd = new
            for number in range(1, MAX_NUMBER + 1):
                name = file_name(run, number)
                if _exists(dir_fd, file_name(run, number, SEALED_SUFFIX)):
                    continue
                stream = create_at(dir_fd, name, shown / name, FLAG)
                if stream is not None:
                    break
            else:
                raise UsageError(f"{FLAG} {shown}: {MAX_NUMBER} files of run {run} already")
            meta = {**self._meta, "host": host, "kernel": "", "arch": "", "boot_time": "",
                    "realtime_offset_ns": str(offset_ns), "started": f"{time.time():.3f}",
                    "run_id": run, "boot_id": boot, "part": str(number)}  # fmt: skip
            try:
                writer = RecordingWriter(stream, self.schema, meta, offset_ns)
            except OSError as exc:
                stream.close()
                raise RingtoolError(f"{FLAG} {shown / name}: {exc.strerror or exc}") from None
        except BaseException:
            os.close(dir_fd)
            raise
        f = self.open[key] = _Open(key, dir_fd, name, shown / name, writer)
        return f

    def _close(self, f: _Open) -> None:
        """``f``'s summary and end marker, then its seal handed to the sealing thread
        (the collector goes on reading meanwhile)."""
        del self.open[f.key]
        host, boot, run, _ = f.key
        book = self.books[host][f"{boot}/{run}"]
        try:
            f.writer.account(SUMMARY, {"type": "summary", "host": host, "boot": boot, "run": run,
                                       "events": f.events, "export": book.stats})  # fmt: skip
            f.writer.close()
        except OSError as exc:
            raise RingtoolError(f"{FLAG} {f.shown}: {exc.strerror or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                f.writer.stream.close()
            os.close(f.dir_fd)
        self._sealer.submit(self._seal, f)

    def _seal(self, f: _Open) -> None:
        """In the sealing thread: ``f`` as Parquet, its directory opened again (a
        file waiting for its seal holds no descriptor); a seal that fails is said
        (the stream stays)."""
        host, _, _, hour = f.key
        try:
            dir_fd = self._host_fd(host)
            for name in hour_dirs(host, hour)[1:]:
                new = subdir_at(dir_fd, name, f.shown.parent, FLAG)
                os.close(dir_fd)
                dir_fd = new
            try:
                self.sealed.append(f.shown.with_name(seal(dir_fd, f.name, self.schema, f.shown)))
            finally:
                os.close(dir_fd)
        except (OSError, RecordingError, UsageError) as exc:
            why = getattr(exc, "strerror", None) or exc
            self.note(f"{f.shown}: left as an Arrow IPC stream, not sealed as Parquet: {why}")

    def _account(self, fleet: Fleet) -> None:
        for host in sorted(self.dirty):
            runs = self.books.get(host, {})
            view = fleet.hosts.get(host)
            gaps, elsewhere = view.accounting() if view is not None else (0, 0)
            doc = {"host": host, "recorded": sum(b.recorded for b in runs.values()),
                   "rejected": sum(sum(b.rejected.values()) for b in runs.values()),
                   "gaps": gaps, "read_elsewhere": elsewhere,
                   "duplicates": view.duplicates if view is not None else 0,
                   "runs": {k: b.record() for k, b in sorted(runs.items())}}  # fmt: skip
            data = (json.dumps(doc, indent=1) + "\n").encode()
            host_fd = self._host_fd(host)
            try:
                replace_at(host_fd, ACCOUNTING, data, self.root / f"host={host}" / ACCOUNTING, FLAG)
            finally:
                os.close(host_fd)
        self.dirty.clear()
        self._accounted = time.monotonic()


def _counts(obj: Any) -> dict[str, int]:
    """Counts by name read back from an accounting file (none: empty)."""
    if obj is None:
        return {}
    return {str(k): int(v) for k, v in dict(obj).items()}


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


__all__ = ["ACCOUNTING", "ACCOUNT_S", "IDLE_S", "MAX_OPEN", "FleetRecorder", "RunBook"]
