"""A ``ringtool mark`` in the fleet export: each trace exports the marker like any
event (JSON lines and raw rows), and ``ringtool collect`` reads it back."""

from __future__ import annotations

import json
import secrets
import subprocess

import pytest

from tests.helpers.export import finish
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.procs import run_ringtool
from tests.helpers.servers import NatsServer
from tests.helpers.trace import Trace, unique_comm

# host_only: a marker through the export: the marker itself runs on every kernel in
# tests/kernel/trace/test_mark.py (CI runs it on the host, not again in the emulated
# VM).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def test_a_mark_reaches_the_fleet_in_both_formats(nats: NatsServer) -> None:
    tag = secrets.token_hex(6)
    flags = ["--json", "--events", "open", "--export", nats.url]
    traces = {
        host: Trace(*flags, "-c", unique_comm(), "--host-name", host, "--export-format", fmt)
        for host, fmt in (("m1", "json"), ("m2", "rows"))
    }
    try:
        done = run_ringtool("mark", f"deploy {tag}")
        assert done.returncode == 0, done.stderr
    finally:
        ends = {host: finish(t) for host, t in traces.items()}
    for summary, _, _ in ends.values():
        assert summary["export"]["exported"] >= 1, summary
    p = subprocess.run([*RINGTOOL, "collect", nats.url, "--interval", "0.3", "--merged", "--drain"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    got = [json.loads(line) for line in p.stdout.splitlines() if tag in line]
    marks = sorted((e["host"], e["type"], e["text"]) for e in got)
    assert marks == [("m1", "mark", f"deploy {tag}"), ("m2", "mark", f"deploy {tag}")]
