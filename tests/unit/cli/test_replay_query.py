"""``ringtool replay`` and ``ringtool query`` on files that are not whole recordings:
one line naming the file and where it stops (exit 1), never a traceback; on a whole
one, ``query`` prints process data escaped (a table, JSON, CSV)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from ringtool.event.records import Records
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.recordings import LAYOUT, write_recording


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RINGTOOL, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def _opens(comm: bytes) -> np.ndarray:  # type: ignore[type-arg]
    arr = np.zeros(3, LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("open")
    arr["h"]["pid"] = [1, 2, 2]
    arr["h"]["comm"] = comm
    arr["data"] = b"/etc/\x1b[2Jx"
    return arr


def _recording(tmp: Path, comm: bytes = b"ok") -> tuple[Path, bytes]:
    arr = _opens(comm)
    data = write_recording([Records(arr), Records(arr)], summary={"type": "summary",
                                                                  "events": 6})  # fmt: skip
    path = tmp / "r.arrows"
    path.write_bytes(data)
    return path, data


def test_a_cut_recording_is_one_line(tmp_path: Path) -> None:
    path, data = _recording(tmp_path)
    first = write_recording([Records(_opens(b"ok"))], close=False)  # to batch 1's stats
    path.write_bytes(data[: len(first) + 50])  # inside batch 2
    for cmd in (("replay", str(path), "--json"), ("query", str(path), "SELECT 1")):
        res = _run(*cmd)
        assert res.returncode == 1, res.stderr
        [line] = [x for x in res.stderr.splitlines() if not x.startswith("{")]
        assert line.startswith(f"ringtool {cmd[0]}: {path}: ")
        assert "after batch 1 (3 events read)" in line
    # replay showed the first batch, whole
    out = _run("replay", str(path), "--json").stdout.splitlines()
    assert [json.loads(x)["pid"] for x in out[:-1]] == [1, 2, 2]


def test_a_damaged_recording_is_one_line(tmp_path: Path) -> None:
    path, data = _recording(tmp_path)
    broken = bytearray(data)
    start = len(write_recording([], close=False))  # the schema and the start message
    for at in range(start + 100, start + 400):  # inside batch 1's message
        broken[at] ^= 0xFF
    path.write_bytes(bytes(broken))
    res = _run("replay", str(path))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"ringtool replay: {path}: " in res.stderr


def test_not_a_recording_and_missing_files(tmp_path: Path) -> None:
    other = tmp_path / "x.jsonl"
    other.write_text('{"type": "open"}\n')
    res = _run("replay", str(other))
    assert res.returncode == 1
    assert res.stderr.strip().startswith(f"ringtool replay: {other}: not a ringtool recording")
    res = _run("query", str(tmp_path / "none.arrows"), "SELECT 1")
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr


def test_query_prints_process_data_escaped(tmp_path: Path) -> None:
    path, _ = _recording(tmp_path, comm=b"e\x1b]0;x\x07")
    sql = "SELECT comm, path, count(*) AS n FROM open GROUP BY ALL"
    table = _run("query", str(path), sql)
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\\x1b[2Jx" in table.stdout and "(1 row)" in table.stdout
    rows = [json.loads(x) for x in _run("query", str(path), "--json", sql).stdout.splitlines()]
    assert rows == [{"comm": "e\x1b]0;x\x07", "path": "/etc/\x1b[2Jx", "n": 6}]
    csv_out = _run("query", str(path), "--csv", sql).stdout
    assert "\x1b" not in csv_out and csv_out.startswith("comm,path,n\n")
    bad = _run("query", str(path), "SELEC 1")
    assert bad.returncode == 2 and bad.stderr.startswith("ringtool query: SQL: Parser Error")


def test_sql_without_a_statement_is_one_line(tmp_path: Path) -> None:
    # before: DuckDB returned no cursor for it: an AttributeError traceback
    path, _ = _recording(tmp_path)
    for sql in ("", ";", "  ;\n", "-- nothing"):
        res = _run("query", str(path), sql)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.startswith("ringtool query: SQL: no statement"), res.stderr
        assert len(res.stderr.splitlines()) == 1, res.stderr
