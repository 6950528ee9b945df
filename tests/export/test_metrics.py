"""``--metrics``: a real Prometheus server scrapes ``trace`` and ``collect``; what its
HTTP query API returns equals ringtool's own summary."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.export import finish, wait_exported, work
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer, Prometheus, free_port
from tests.helpers.trace import Trace, hot_file, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel


def by_label(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {r["metric"][label]: float(r["value"][1]) for r in result}


def until(prom: Prometheus, expr: str, ok: Callable[[list[dict[str, Any]]], bool]) -> Any:
    """Query ``expr`` until ``ok(result)`` (a scrape after the values settled)."""
    deadline = time.monotonic() + 90
    while True:
        result = prom.query(expr)
        if result and ok(result):
            return result
        assert time.monotonic() < deadline, (expr, result)
        time.sleep(0.5)


def test_prometheus_scrapes_trace_and_collect(nats: NatsServer, tmp_path: Path) -> None:
    trace_port, collect_port = free_port(), free_port()
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = Trace("--json", "--stats", "-c", comm, "--events", "open", "--interval", "0.5",
                  "--buffer-pages", "2048", "--export", nats.url, "--host-name", "m1",
                  "--metrics", f"127.0.0.1:{trace_port}")  # fmt: skip
    # the endpoint answers in the exposition format, before Prometheus is involved
    with urllib.request.urlopen(f"http://127.0.0.1:{trace_port}/metrics", timeout=10) as r:
        assert r.status == 200
    work(comm, target, 4000)
    wait_exported(trace, 4000)
    time.sleep(1.0)  # one more interval: the counters the endpoint reads are final
    prom = Prometheus(tmp_path / "prom", [f"127.0.0.1:{trace_port}", f"127.0.0.1:{collect_port}"])
    try:
        q = 'ringtool_events_total{host="m1",source="open",type="open"}'
        events = until(prom, q, lambda r: float(r[0]["value"][1]) > 0)
        exported = by_label(until(prom, 'ringtool_exported_total{host="m1"}', bool), "cpu")
        xdrop = by_label(prom.query('ringtool_export_dropped_total{host="m1"}'), "cpu")
        why = by_label(prom.query('ringtool_export_dropped_by_reason_total{host="m1"}'), "reason")
        cpu_events = by_label(prom.query('ringtool_cpu_events_total{host="m1"}'), "cpu")
        dropped = prom.query('sum(ringtool_dropped_total{host="m1"})')
        nbytes = prom.query('ringtool_export_bytes_total{host="m1"}')
        fill = by_label(prom.query('ringtool_ring_fill_ratio{host="m1"}'), "cpu")
        summary, _, _ = finish(trace)
        x = summary["export"]
        assert float(events[0]["value"][1]) == summary["by_type"]["open"] == summary["events"]
        assert exported == {str(c): float(n) for c, n in enumerate(x["exported_per_cpu"])}
        assert xdrop == {str(c): float(n) for c, n in enumerate(x["export_dropped_per_cpu"])}
        assert why == {r: float(n) for r, n in x["export_dropped_by_reason"].items()}
        assert "publisher_died" in why
        assert sum(cpu_events.values()) == summary["events"]
        assert float(dropped[0]["value"][1]) == summary["dropped"]
        assert float(nbytes[0]["value"][1]) == x["export_bytes"]
        assert set(fill) == set(exported) and all(0 <= v <= 1 for v in fill.values())

        collect = subprocess.Popen(
            [*RINGTOOL, "collect", nats.url, "--json", "--interval", "0.5",
             "--metrics", f"127.0.0.1:{collect_port}"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            got = until(prom, 'sum(ringtool_collect_events_total{host="m1"})',
                        lambda r: float(r[0]["value"][1]) == x["exported"])  # fmt: skip
            assert got
            # the consumer lag goes to 0 once the backlog is read
            until(prom, "ringtool_collect_pending_messages", lambda r: r[0]["value"][1] == "0")
            host_x = prom.query('ringtool_host_exported_total{host="m1"}')
            assert float(host_x[0]["value"][1]) == x["exported"]
        finally:
            collect.send_signal(signal.SIGINT)
            out, err = collect.communicate(timeout=30)
        assert collect.returncode == 0, err
        final = json.loads(out.splitlines()[-1])
        assert final["per_host"]["m1"]["events"] == x["exported"]
        assert final["pending_messages"] == 0
    finally:
        prom.stop()
