"""``ringtool trace --record`` on real BPF, beside ``--json``: the recording replays
(``ringtool replay --json``) to the same lines byte for byte, the summary included;
DuckDB reading the file itself (through pyarrow, not ringtool) answers what the JSON
lines answer; ``ringtool query`` too; and a recorder killed with SIGKILL mid-run
leaves a file that reads back to its last whole batch, then one line saying where it
stops. The recording has nothing of the kernel's version: host_only."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.trace import Trace, Worker, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*RINGTOOL, *args], cwd=ROOT, capture_output=True, timeout=300,
                          check=False)  # fmt: skip


def _duckdb_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """``sql`` over the recording as DuckDB sees it through pyarrow (table ``rec``),
    the batches a reader gets before any damage."""
    reader = ipc.open_stream(pa.OSFile(str(path)))
    batches = []
    try:
        for b in reader:
            batches.append(b)
    except (OSError, pa.ArrowException):
        pass  # a killed recorder's last, cut message
    rec = pa.Table.from_batches(batches, reader.schema)  # noqa: F841 (DuckDB reads it by name)
    return duckdb.sql(sql).fetchall()


def test_record_beside_json_replays_byte_for_byte(tmp_path: Path) -> None:
    comm = unique_comm()
    worker = Worker(comm, "seq", tmp_path / "missing", 300)
    path = tmp_path / "run.arrows"
    t = Trace("--json", "--events", "open,exec", "--record", str(path), "--interval", "0.2")
    worker.go()
    worker.wait()
    time.sleep(0.5)
    t.signal(signal.SIGINT)
    lines, _ = t.finish()
    live = "".join(line + "\n" for line in lines)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    events = [json.loads(line) for line in lines[:-1]]
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary" and summary["events"] == len(events)
    mine = [e for e in events if e["comm"] == comm and e["type"] == "open"]
    assert len(mine) == 300 and all(e["ret"] < 0 for e in mine)

    replayed = _run("replay", str(path), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.decode() == live

    # DuckDB on the file, without ringtool: opens per process, as the JSON lines say
    by_pid = Counter(e["pid"] for e in events if e["type"] == "open")
    rows = _duckdb_rows(path, "SELECT pid, count(*) FROM rec WHERE type = 'open' GROUP BY pid")
    assert dict(rows) == dict(by_pid)
    failed = _duckdb_rows(path, f"SELECT count(*) FROM rec WHERE type = 'open' AND ret < 0 "
                          f"AND comm = '{comm}'::BLOB")  # fmt: skip
    assert failed == [(300,)]
    # and each path as the JSON lines give it: the string, no NUL or stale byte after it
    paths = _duckdb_rows(path, f"SELECT DISTINCT data FROM rec WHERE type = 'open' "
                         f"AND comm = '{comm}'::BLOB")  # fmt: skip
    assert sorted(bytes(p).decode() for (p,) in paths) == sorted({e["path"] for e in mine})

    q = _run("query", str(path), "--json",
             f"SELECT count(*) AS n FROM open WHERE comm = '{comm}' AND ret < 0")  # fmt: skip
    assert q.returncode == 0, q.stderr
    assert [json.loads(x) for x in q.stdout.decode().splitlines()] == [{"n": 300}]

    # filtered replay: the same events the JSON lines have for that process
    only = _run("replay", str(path), "--json", "-c", comm)
    assert only.returncode == 0, only.stderr
    got = [json.loads(x) for x in only.stdout.decode().splitlines()]
    assert got[:-1] == [e for e in events if e["comm"] == comm]
    assert got[-1]["events"] == len(got) - 1 and got[-1]["dropped"] == summary["dropped"]


def test_a_recorder_killed_mid_run_reads_back_to_its_last_batch(tmp_path: Path) -> None:
    path = tmp_path / "killed.arrows"
    worker = Worker(unique_comm(), "seq", tmp_path / "missing", 500_000)
    t = Trace("--json", "--events", "open", "--record", str(path), "--interval", "0.2")
    worker.go()
    deadline = time.monotonic() + 120
    while path.stat().st_size < 1 << 20:  # a few batches on disk, more coming
        assert time.monotonic() < deadline, path.stat().st_size
        time.sleep(0.05)
    t.signal(signal.SIGKILL)
    t.proc.wait(timeout=60)
    worker.proc.kill()
    worker.proc.wait(timeout=60)
    replayed = _run("replay", str(path), "--json")
    assert replayed.returncode == 1, replayed.stderr
    # stderr: the start line (JSON, as live), then the one line naming where it stops
    [err] = [x for x in replayed.stderr.decode().splitlines() if not x.startswith("{")]
    assert err.startswith(f"ringtool replay: {path}: ") and "the events before it were read" in err
    lines = replayed.stdout.decode().splitlines()
    events = [json.loads(x) for x in lines[:-1]]
    assert len(events) > 1000
    # what pyarrow itself reads of the file: the same rows
    assert _duckdb_rows(path, "SELECT count(*) FROM rec") == [(len(events),)]
    # the summary: the recording's last stats, the events replayed
    assert json.loads(lines[-1])["events"] == len(events)
    assert os.path.getsize(path) > 0


def test_a_flight_recorder_s_dumps_are_recorded(tmp_path: Path) -> None:
    comm = unique_comm()
    worker = Worker(comm, "seq", tmp_path / "missing", 200)
    path = tmp_path / "fr.arrows"
    t = Trace("--json", "--events", "open", "--flight-recorder", "1M", "--record", str(path))
    worker.go()
    worker.wait()
    t.signal(signal.SIGINT)  # the dump at exit
    lines, _ = t.finish()
    assert sum(json.loads(x).get("comm") == comm for x in lines[:-1]) == 200
    replayed = _run("replay", str(path), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.decode() == "".join(line + "\n" for line in lines)
