"""``ringtool collect --record DIR`` against a real nats-server: two ``trace --export``
hosts with known workloads, in either format (``rows``; ``json``, the default); what
is on disk per host is exactly what the host exported (its accounting: generated =
exported + dropped + lost + export_dropped), line for line what it printed, and both
formats are one table; a killed collector's files read back to their last whole
batch; a jsonl/1 message's hostile lines are counted by their reason, the others
recorded."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from ringtool.event.decode import Decoder
from ringtool.event.syscalls import syscall_namer
from ringtool.export.partitions import partition_values
from ringtool.export.wire import Batch, Encoder, Origin
from ringtool.trace.writers.fleet_lines import BAD_VALUE, NOT_JSON
from tests.helpers.busy_records import LAYOUT, disk_records, tcp_records
from tests.helpers.collect import Msg
from tests.helpers.export import Collect, finish, work
from tests.helpers.fleet_broker import collect, publish
from tests.helpers.partitions import accounting, host_lines, modes
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer
from tests.helpers.stream_check import event_lines
from tests.helpers.trace import Trace, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel

HOSTS = {"web1": 3000, "db1": 4500}
ROWS = {"web1": "rows", "db1": "rows"}
MIXED = {"web1": "rows", "db1": "json"}


def traced(server: NatsServer, tmp_path: Path,
           formats: dict[str, str]) -> dict[str, tuple[dict, list[str]]]:  # type: ignore[type-arg]  # fmt: skip
    """Each host's trace of its own workload of opens, exporting in its format of
    ``formats`` (``json``: the default, no flag): its summary and event lines."""
    traces = {}
    for host in HOSTS:
        comm = unique_comm()
        fmt = [] if formats[host] == "json" else ["--export-format", formats[host]]
        traces[host] = (Trace("--json", "-c", comm, "--events", "open", "--buffer-pages", "2048",
                              "--export", server.url, "--host-name", host, *fmt), comm)  # fmt: skip
    target = tmp_path / "hot"
    target.write_text("x")
    for host, (_tr, comm) in traces.items():
        work(comm, target, HOSTS[host])
    out = {}
    for host, (tr, _) in traces.items():
        summary, lines, _ = finish(tr)
        out[host] = (summary, event_lines(lines))
    return out


def collected(nats: NatsServer, tmp_path: Path) -> Path:
    """``ringtool collect --drain --record DIR`` of the stream, run once it ended well;
    DIR (``tmp_path/fleet``)."""
    rec = tmp_path / "fleet"
    p = subprocess.run([*RINGTOOL, "collect", nats.url, "--json", "--drain", "--interval", "0.3",
                        "--record", str(rec)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return rec


def test_record_holds_exactly_what_each_host_exported(nats: NatsServer, tmp_path: Path) -> None:
    ran = traced(nats, tmp_path, ROWS)
    rec = collected(nats, tmp_path)
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
        assert book["gaps"] == 0 and book["rejected"] == 0
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
    ran = traced(nats, tmp_path, ROWS)
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


def _fields(lines: list[str]) -> list[dict]:  # type: ignore[type-arg]
    return sorted((json.loads(line) for line in lines), key=lambda o: json.dumps(o, sort_keys=True))


def test_a_json_host_is_recorded_line_for_line_in_one_table_with_a_rows_host(
    nats: NatsServer, tmp_path: Path
) -> None:
    ran = traced(nats, tmp_path, MIXED)  # db1 exports in the default format: json
    rec = collected(nats, tmp_path)
    on_disk = host_lines(rec)
    assert sorted(on_disk) == sorted(HOSTS)
    for host, n in HOSTS.items():
        summary, lines = ran[host]
        assert summary["events"] + summary["dropped"] + summary["lost"] == n
        book = accounting(rec, host)
        (run,) = book["runs"].values()
        assert run["kind"] == "summary" and run["rejected"] == 0 and run["non_event"] == {}
        # on disk: what the host exported, minus what its accounting says was dropped
        assert len(on_disk[host]) == book["recorded"] == run["recorded"] == run["exported"]
        assert run["exported"] == summary["events"] - run["export_dropped"]
        assert book["gaps"] == 0
        if run["export_dropped"] == 0:  # line for line, field for field, what it printed
            assert sorted(on_disk[host]) == sorted(lines), host
            assert _fields(on_disk[host]) == _fields(lines), host

    # one table: every Parquet file of both hosts has the one schema
    import pyarrow.parquet as pq

    files = sorted(rec.rglob("*.parquet"))
    assert {partition_values(f, rec)["host"] for f in files} == set(HOSTS)
    assert len({pq.read_schema(f).remove_metadata().to_string() for f in files}) == 1
    # ringtool query: each host's opens, their fields as the host printed them
    q = subprocess.run([*RINGTOOL, "query", str(rec), "--json",
                        "SELECT host, pid, tid, comm, path, flags, ret, syscall FROM open"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert q.returncode == 0, q.stderr
    keys = ("pid", "tid", "comm", "path", "flags", "ret", "syscall")
    for host in HOSTS:
        got = sorted(tuple(o[k] for k in keys) for o in map(json.loads, q.stdout.splitlines())
                     if o["host"] == host)  # fmt: skip
        assert got == sorted(tuple(json.loads(line)[k] for k in keys) for line in on_disk[host])
    # DuckDB reads the partitions as one table, host from the directory names
    import duckdb

    glob = str(rec / "**" / "*.parquet")
    rows = duckdb.sql(f"SELECT host, count(*), count(DISTINCT typeof(ts)) FROM read_parquet("
                      f"'{glob}', hive_partitioning = true) GROUP BY host").fetchall()  # fmt: skip
    assert sorted(rows) == sorted((h, len(on_disk[h]), 1) for h in HOSTS)


OFFSET = 1_765_000_000 * 10**9


def test_a_json_message_s_hostile_lines_are_counted_the_others_recorded(
    broker: NatsServer, tmp_path: Path
) -> None:
    enc = Encoder(Origin("web2", "boot1", "run1", "trace", OFFSET), "json", "ringtool",
                  Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET))  # fmt: skip
    conns = [("10.1.0.1", 40000 + i, "fd00::9", 443, 1000 * i, i, 100 + i, b"curl\x1b[2J")
             for i in range(60)]  # fmt: skip
    ios = [(8, 0, 4096 * (1 + i % 4), 50_000 + 997 * i) for i in range(40)]
    opens = np.zeros(50, LAYOUT.event)
    opens["h"]["type"], opens["h"]["ts"] = LAYOUT.type_id("open"), 10**12 + np.arange(50)
    opens["h"]["comm"], opens["data"] = (
        b"\xff\xfecat",
        [b"/tmp/\x1b]0;x\a%d" % i for i in range(50)],
    )
    msgs, sent = [], []
    for kind, arr in (("open", opens), ("tcp", tcp_records(conns)), ("disk", disk_records(ios))):
        batch = Batch(0, kind, 1, len(arr), arr, arr.nbytes)
        for m in enc.encode(batch):
            msgs.append(Msg(m.subject, m.headers, m.body))
            sent += m.body.decode().split("\n")[:-1]
    lines = msgs[0].data.decode().split("\n")[:-1]  # opens: three lines made hostile
    flags = json.loads(lines[1]) | {"syscall": "openat9"}  # no syscall has that name
    bad = ["not json", json.dumps(flags), json.dumps({"type": "stats", "events": 9})]
    msgs[0].data = ("\n".join(bad + lines[3:]) + "\n").encode()
    assert publish(broker, "web2", *msgs) == []
    rec = tmp_path / "fleet"
    summary, err = collect(broker, "--record", str(rec))
    assert summary["bad_messages"] == 0, summary["bad_reasons"]
    assert sorted(host_lines(rec)["web2"]) == sorted(sent[3:])
    (run,) = accounting(rec, "web2")["runs"].values()
    assert run["recorded"] == len(sent) - 3 and run["rejected"] == 2
    assert run["rejected_by_reason"] == {NOT_JSON: 1, BAD_VALUE: 1}
    assert run["non_event"] == {"stats": 1}
    assert f"web2: a line {NOT_JSON}" in err and f"web2: a line {BAD_VALUE}" in err
