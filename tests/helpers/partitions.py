"""Reading ``collect --record DIR`` back for tests: each host's events as the JSON
lines ``trace --json`` prints (through the product's readers and its JSON encoder),
and the modes of everything below the directory."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from ringtool.errors import RecordingTruncated
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.recording import RecordingReader
from ringtool.event.syscalls import syscall_namer
from ringtool.export.partitions import partition_values
from ringtool.export.wire import json_lines
from ringtool.trace.writers.parquet_seal import read_sealed

LAYOUT = load_layout()
SCHEMA = RecordSchema(LAYOUT)


def _lines(batches: list[Any], offset_ns: int) -> list[str]:
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=offset_ns)
    out: list[str] = []
    for b in batches:
        out += json_lines(dec, SCHEMA.from_arrow(b)).decode().split("\n")[:-1]
    return out


def host_lines(root: Path, *, cut_ok: bool = False) -> dict[str, list[str]]:
    """Per host (its ``host=`` directory), the event lines of every file below
    ``root``; a stream cut short gives its whole batches when ``cut_ok``."""
    out: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        host = partition_values(path, root).get("host")
        if path.suffix == ".parquet":
            table, meta, _ = read_sealed(path, SCHEMA)
            lines = _lines(table.to_batches(), int(meta["realtime_offset_ns"]))
        elif path.suffix == ".arrows":
            reader = RecordingReader(path, SCHEMA)
            got: list[Any] = []
            try:
                got.extend(b for b, _ in reader.batches())
            except RecordingTruncated:
                if not cut_ok:
                    raise
            lines = _lines(got, reader.recording.offset_ns)
        else:
            continue
        assert host is not None, path
        out.setdefault(host, []).extend(lines)
    return out


def accounting(root: Path, host: str) -> dict[str, Any]:
    return json.loads((root / f"host={host}" / "accounting.json").read_text())  # type: ignore[no-any-return]


def modes(root: Path) -> set[tuple[str, int]]:
    """``("dir" | "file" | "other", permission bits)`` of everything below ``root``."""
    out = set()
    for p in root.rglob("*"):
        st = p.lstat()
        kind = (
            "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
        )
        out.add((kind, stat.S_IMODE(st.st_mode)))
    return out
