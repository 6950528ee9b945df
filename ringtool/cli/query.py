"""``ringtool query FILE... 'SQL'``: SQL (DuckDB) over recordings.

The files' batches (checked as ``replay`` checks them) are one Arrow table, ``raw``,
with the views of :mod:`ringtool.event.record_sql` over it (``events``, one per event
type: ``exec``, ``open``, ``syscall``...) and ``recording`` (one row per file: host,
kernel, command line, summary). The result is a table (every cell printable), JSON
lines or CSV. Needs no privileges.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ringtool.errors import RecordingError, UsageError
from ringtool.event.safe_text import printable

EPILOG = """\
tables: raw (every column of the file, with host, and date and hour of a partition),
events, exec, exit, fork, open, syscall, mark, tcp, net (one per event type, fields
named as in --json), recording (one row per file:
host, kernel, boot_time, argv, summary as JSON). docs/record.md has more examples.

examples:
  ringtool query run.arrows 'SELECT comm, count(*) n FROM open GROUP BY 1 ORDER BY 2 DESC LIMIT 9'
  ringtool query run.arrows 'SELECT uid, filename, count(*) FROM exec WHERE ret < 0 GROUP BY ALL'
  ringtool query run.arrows --json 'SELECT pid, comm, max(latency_us) FROM syscall GROUP BY ALL'
  ringtool query /srv/fleet "SELECT host, raddr, sum(tx_bytes) FROM tcp GROUP BY ALL"
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "query",
        help="SQL (DuckDB) over recordings (trace --record): a table, JSON or CSV",
        description="Run one SQL statement (DuckDB) over recordings made with "
        "ringtool trace --record FILE.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="recordings, or a directory of collect --record",
    )
    p.add_argument("sql", metavar="SQL", help="the statement (after the files)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object per row")
    out.add_argument("--csv", action="store_true", help="CSV (RFC 4180) with a header line")
    p.set_defaults(func=run)


def _files(paths: Sequence[Path]) -> list[tuple[Path, dict[str, str] | None]]:
    """Each recording to read with its partition values: a file as given; a directory
    (``collect --record DIR``) as its ``.parquet`` and ``.arrows`` regular files below
    it, in path order, with the ``key=value`` directories above each (None: a file given
    by name; a stream whose Parquet file is beside it is the same rows: left out)."""
    from ringtool.export.partitions import SEALED_SUFFIX, STREAM_SUFFIX, partition_values
    from ringtool.trace.writers.parquet_seal import sealed_twin

    out: list[tuple[Path, dict[str, str] | None]] = []
    for path in paths:
        if not path.is_dir():
            out.append((path, None))
            continue
        found = sorted(p for p in path.rglob("*") if p.suffix in (STREAM_SUFFIX, SEALED_SUFFIX)
                       and not p.name.startswith(".") and not p.is_symlink()
                       and p.is_file() and not sealed_twin(p))  # fmt: skip
        if not found:
            raise UsageError(f"{path}: no recordings (*.arrows, *.parquet) below it")
        out.extend((p, partition_values(p, path)) for p in found)
    return out


def _read(path: Path, schema: Any, in_dir: bool) -> tuple[list[Any], dict[str, str], Any]:
    """A file's batches (checked), metadata and summary. In a directory a stream cut
    short (a collector still writing it, or killed) gives its whole batches, and a
    note on stderr; a file given by name is refused."""
    from ringtool.errors import RecordingTruncated
    from ringtool.event.recording import RecordingReader
    from ringtool.export.partitions import SEALED_SUFFIX
    from ringtool.trace.writers.parquet_seal import read_sealed

    if path.suffix == SEALED_SUFFIX and in_dir:
        table, meta, summary = read_sealed(path, schema)
        return table.to_batches(), meta, summary
    reader = RecordingReader(path, schema)
    got: list[Any] = []
    try:
        got.extend(b for b, _ in reader.batches())  # damaged or cut: the error
    except RecordingTruncated as exc:
        if not in_dir:
            raise
        print(f"ringtool query: {printable(str(exc).splitlines()[0])}", file=sys.stderr)
    return got, reader.recording.meta, reader.recording.summary


def _load(paths: Sequence[Path]) -> tuple[Any, list[dict[str, Any]]]:
    import pyarrow as pa

    from ringtool.event.arrow_records import RecordSchema
    from ringtool.event.layout import load_layout

    schema = RecordSchema(load_layout())
    tables: list[Any] = []
    files: list[dict[str, Any]] = []
    for path, found in _files(paths):
        got, meta, summary = _read(path, schema, found is not None)
        parts = found or {}
        rows = pa.Table.from_batches(
            [b.select(schema.schema.names) if len(b.schema) == len(schema.schema)
             else _widen(b, schema.schema) for b in got], schema.schema)  # fmt: skip
        host = parts.get("host", meta.get("host"))
        for key, value in (("host", host), ("date", parts.get("date")),
                           ("hour", parts.get("hour"))):  # fmt: skip
            rows = rows.append_column(key, pa.array([value] * len(rows), pa.string()))
        tables.append(rows)
        files.append({"path": str(path), **{k: meta.get(k) for k in (
            "host", "kernel", "arch", "boot_time", "argv", "started", "run_id", "part",
            "layout_sha256")}, "summary": json.dumps(summary)})  # fmt: skip
    return pa.concat_tables(tables), files


def _widen(batch: Any, schema: Any) -> Any:
    """A batch of a recording that lacks columns of this layout: those as nulls."""
    import pyarrow as pa

    cols = [batch.column(f.name) if f.name in batch.schema.names
            else pa.nulls(batch.num_rows, f.type) for f in schema]  # fmt: skip
    return pa.record_batch(cols, schema=schema)


def run(args: argparse.Namespace) -> int:
    import duckdb
    import pyarrow as pa

    from ringtool.event.layout import load_layout
    from ringtool.event.record_sql import VIEWS, lookup_tables, with_text
    from ringtool.event.syscalls import syscall_namer

    table, files = _load(args.files)
    con = duckdb.connect(":memory:")
    con.register("raw_table", with_text(table))
    con.execute("CREATE VIEW raw AS SELECT * FROM raw_table")
    for name, t in lookup_tables(load_layout(), syscall_namer()).items():
        con.register(name, t)
    con.register("recording", pa.Table.from_pylist(files))
    for name, select in VIEWS.items():
        con.execute(f'CREATE VIEW "{name}" AS {select}')
    try:
        cur = con.execute(args.sql)
        if cur is None:  # DuckDB found no statement in it (empty, ';', a comment)
            raise UsageError('SQL: no statement: give one, e.g. "SELECT count(*) FROM events"')
        names = [d[0] for d in cur.description or []]
        rows = cur.fetchall() if names else []
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"SQL: {printable(first)}") from None
    write = _json if args.json else _csv if args.csv else _table
    write(names, rows, sys.stdout)
    return 0


def cell(v: Any) -> Any:
    """A result value as JSON takes it: text for bytes (escaped) and times (ISO 8601)."""
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).decode("utf-8", "backslashreplace")
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, list | tuple):
        return [cell(x) for x in v]
    if isinstance(v, dict):
        return {str(k): cell(x) for k, x in v.items()}
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    return str(v)


def text(v: Any) -> str:
    """A result value as one printable cell (process data is data: escapes, no markup)."""
    c = cell(v)
    if c is None:
        return ""
    return printable(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False))


def _json(names: list[str], rows: list[tuple[Any, ...]], out: TextIO) -> None:
    from ringtool.event.json_lines import object_line

    out.write("".join(object_line({n: cell(v) for n, v in zip(names, r, strict=True)}) + "\n"
                      for r in rows))  # fmt: skip


def _csv(names: list[str], rows: list[tuple[Any, ...]], out: TextIO) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow([printable(n) for n in names])
    w.writerows([text(v) for v in r] for r in rows)


def _table(names: list[str], rows: list[tuple[Any, ...]], out: TextIO) -> None:
    cells = [[printable(n) for n in names], *([text(v) for v in r] for r in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(names))]
    for row in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


__all__ = ["RecordingError", "cell", "register", "run", "text"]
