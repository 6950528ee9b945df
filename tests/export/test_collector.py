"""``ringtool collect``: three ``trace --export`` instances (different --host-name, one
in the rows format) into one real nats-server, read back by the fleet view."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.export import finish, work
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer
from tests.helpers.stream_check import event_lines
from tests.helpers.trace import Trace, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel

HOSTS = {"web1": ("json", 3000), "web2": ("rows", 4000), "db1": ("json", 5000)}


def collect(server: NatsServer, *args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([*RINGTOOL, "collect", server.url, "--interval", "0.3", *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    return p


def fleet(server: NatsServer, tmp_path: Path) -> dict[str, Any]:
    """Run the three tracers (each with its own workload) and return per host:
    its summary and the event lines it printed."""
    traces = {}
    for host, (fmt, n) in HOSTS.items():
        comm = unique_comm()
        tr = Trace("--json", "-c", comm, "--events", "open", "--buffer-pages", "2048",
                   "--export", server.url, "--host-name", host, "--export-format", fmt)  # fmt: skip
        traces[host] = (tr, comm, n)
    target = tmp_path / "hot"
    target.write_text("x")
    for _tr, comm, n in traces.values():
        work(comm, target, n)
    out = {}
    for host, (tr, _comm, _n) in traces.items():
        summary, lines, _ = finish(tr)
        out[host] = {"summary": summary, "lines": event_lines(lines)}
    return out


def strip_host(line: str) -> str:
    obj = json.loads(line)
    obj.pop("host")
    return json.dumps(obj)


def test_three_tracers_one_fleet_view(nats: NatsServer, tmp_path: Path) -> None:
    ran = fleet(nats, tmp_path)
    p = collect(nats, "--json", "--drain")
    summary = json.loads(p.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["hosts"] == 3
    assert summary["pending_messages"] == 0 and summary["bad_messages"] == 0
    for host, (_fmt, n) in HOSTS.items():
        mine, theirs = summary["per_host"][host], ran[host]["summary"]
        assert mine["events"] == theirs["export"]["exported"] == theirs["events"]
        assert theirs["events"] + theirs["dropped"] == n
        assert mine["dropped"] == theirs["dropped"]
        assert mine["export_dropped"] == theirs["export"]["export_dropped"] == 0
        assert mine["gaps"] == 0 and mine["duplicates"] == 0
        assert mine["finished_runs"] == 1
    # per-interval lines: one per host, then the fleet line
    kinds = [json.loads(line)["type"] for line in p.stdout.splitlines()]
    assert kinds.count("fleet") >= 1 and "host" in kinds

    # the same durable consumer resumes: nothing new to read
    again = json.loads(collect(nats, "--json", "--drain").stdout.splitlines()[-1])
    assert again["hosts"] == 0 and again["messages"] == 0

    # merged: every host's events in timestamp order, exactly the lines each printed
    m = collect(nats, "--merged", "--drain", "--durable", "merged")
    lines = m.stdout.splitlines()
    ts = [json.loads(line)["ts"] for line in lines]
    assert ts == sorted(ts)
    stats = json.loads(m.stderr.splitlines()[-1])
    assert stats["out_of_order"] == 0 and stats["events_written"] == len(lines)
    for host in HOSTS:
        got = sorted(strip_host(line) for line in lines if json.loads(line)["host"] == host)
        want = sorted(json.dumps(json.loads(line)) for line in ran[host]["lines"])
        assert got == want, host

    # the table (not a terminal: plain text blocks), read by a third consumer
    t = collect(nats, "--drain", "--durable", "table")
    last = t.stdout.splitlines()[-3:]
    assert [row.split()[0] for row in last] == sorted(HOSTS)


def test_collect_resumes_after_new_events(nats: NatsServer, tmp_path: Path) -> None:
    comm = unique_comm()
    target = tmp_path / "hot"
    target.write_text("x")
    seen = 0
    for round_ in range(2):
        tr = Trace("--json", "-c", comm, "--events", "open", "--export", nats.url,
                   "--host-name", "solo")  # fmt: skip
        work(comm, target, 1000)
        summary, _, _ = finish(tr)
        got = json.loads(collect(nats, "--json", "--drain").stdout.splitlines()[-1])
        solo = got["per_host"]["solo"]
        assert solo["events"] == summary["export"]["exported"], round_  # only the new run
        assert solo["runs"] == 1 and solo["gaps"] == 0
        seen += solo["events"]
    assert seen == 2 * 1000 - 0  # both runs, each read once


def test_collect_unreachable_is_one_line() -> None:
    from tests.helpers.servers import free_port

    url = f"nats://127.0.0.1:{free_port()}"
    p = subprocess.run([*RINGTOOL, "collect", url, "--json", "-d", "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode == 1
    assert p.stderr.strip() == f"ringtool collect: {url}: Connection refused", p.stderr
