"""``ringtool collect --record DIR`` against a real nats-server: two ``trace --export``
hosts (rows/1) with known workloads; what is on disk per host is exactly what the
host exported (its accounting: generated = exported + dropped + lost +
export_dropped), line for line what it printed; a killed collector's files read back
to their last whole batch."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.export import Collect, finish, work
from tests.helpers.partitions import accounting, host_lines, modes
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer
from tests.helpers.stream_check import event_lines
from tests.helpers.trace import Trace, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel

HOSTS = {"web1": 3000, "db1": 4500}


def traced(server: NatsServer, tmp_path: Path) -> dict[str, tuple[dict, list[str]]]:  # type: ignore[type-arg]
    """Each host's trace of its own workload of opens: its summary and event lines."""
    traces = {}
    for host in HOSTS:
        comm = unique_comm()
        traces[host] = (Trace("--json", "-c", comm, "--events", "open", "--buffer-pages", "2048",
                              "--export", server.url, "--host-name", host,
                              "--export-format", "rows"), comm)  # fmt: skip
    target = tmp_path / "hot"
    target.write_text("x")
    for host, (_tr, comm) in traces.items():
        work(comm, target, HOSTS[host])
    out = {}
    for host, (tr, _) in traces.items():
        summary, lines, _ = finish(tr)
        out[host] = (summary, event_lines(lines))
    return out


def test_record_holds_exactly_what_each_host_exported(nats: NatsServer, tmp_path: Path) -> None:
    ran = traced(nats, tmp_path)
    rec = tmp_path / "fleet"
    p = subprocess.run([*RINGTOOL, "collect", nats.url, "--json", "--drain", "--interval", "0.3",
                        "--record", str(rec)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    on_disk = host_lines(rec)
    assert sorted(on_disk) == sorted(HOSTS)
    for host, n in HOSTS.items():
        summary, lines = ran[host]
        x = summary["export"]
        assert summary["events"] + summary["dropped"] + summary["lost"] == n
        book = accounting(rec, host)
        (run,) = book["runs"].values()
        assert run["kind"] == "summary" and run["exported"] == x["exported"]
        assert run["export_dropped"] == x["export_dropped"]
        # on disk: what the host exported, minus what its accounting says was dropped
        assert len(on_disk[host]) == book["recorded"] == run["recorded"]
        assert run["recorded"] == run["exported"] == summary["events"] - run["export_dropped"]
        assert book["gaps"] == 0 and book["not_recorded"] == 0
        if run["export_dropped"] == 0:  # line for line what the host printed
            assert sorted(on_disk[host]) == sorted(lines), host
    # closed files are sealed as Parquet; private modes; no temporary file left
    files = [f for f in rec.rglob("*") if f.is_file()]
    assert {f.suffix for f in files} == {".parquet", ".json"}
    assert modes(rec) == {("dir", 0o700), ("file", 0o600)}
    assert rec.stat().st_mode & 0o777 == 0o700

    # ringtool query reads the directory across hosts
    q = subprocess.run([*RINGTOOL, "query", str(rec), "--json",
                        "SELECT host, count(*) AS n FROM open GROUP BY host ORDER BY host"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert q.returncode == 0, q.stderr
    got = {o["host"]: o["n"] for o in map(json.loads, q.stdout.splitlines())}
    assert got == {h: len(on_disk[h]) for h in HOSTS}
    # and DuckDB reads the Parquet partitions as they are, host from the directory names
    import duckdb

    glob = str(rec / "**" / "*.parquet")
    rows = duckdb.sql(f"SELECT host, count(*) FROM read_parquet('{glob}', "
                      "hive_partitioning = true) GROUP BY host").fetchall()  # fmt: skip
    assert dict(rows) == got

    # a second collector on the same directory (another durable) adds its own files
    # and counts to what it finds there
    p2 = subprocess.run([*RINGTOOL, "collect", nats.url, "--json", "--drain", "--durable",
                         "second", "--record", str(rec)], cwd=ROOT, capture_output=True,
                        text=True, timeout=300)  # fmt: skip
    assert p2.returncode == 0, p2.stderr
    again = host_lines(rec)
    for host in HOSTS:
        assert sorted(again[host]) == sorted(on_disk[host] * 2)
        assert accounting(rec, host)["recorded"] == 2 * len(on_disk[host])


def test_a_killed_collector_leaves_partitions_that_read_back(
    nats: NatsServer, tmp_path: Path
) -> None:
    ran = traced(nats, tmp_path)
    rec = tmp_path / "fleet"
    c = Collect([*RINGTOOL, "collect", nats.url, "--json", "--interval", "0.2",
                 "--record", str(rec)])  # fmt: skip
    deadline = time.monotonic() + 120
    while not any(f.suffix == ".arrows" and f.stat().st_size > 4096 for f in rec.rglob("*")):
        assert c.proc.poll() is None and time.monotonic() < deadline, c.stderr()
        time.sleep(0.05)
    c.proc.send_signal(signal.SIGKILL)
    c.proc.wait(timeout=30)
    assert all(f.suffix != ".parquet" for f in rec.rglob("*"))  # never sealed: killed
    got = host_lines(rec, cut_ok=True)
    assert got, "nothing read back"
    for host, lines in got.items():
        assert set(lines) <= set(ran[host][1]), host  # whole events, each one exported
        assert len(set(lines)) == len(lines)
    q = subprocess.run([*RINGTOOL, "query", str(rec), "--json", "SELECT count(*) AS n FROM raw"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout)["n"] == sum(map(len, got.values()))
