"""``ringtool bench peers --json``: one row per tracer, with figures of the right kind
for those installed and an install command for those not (the peers are not part of
the project's setup: scripts/setup-peers.sh). Timings are reported, not asserted."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from ringtool.bench.peer_tracers import SETUP_SCRIPT, tracers
from tests.helpers.paths import PY, RINGTOOL
from tests.helpers.procs import children_of, running

# host_only: the peer bench's output; its peers are not installed in the VM (CI runs
# it on the host, not again in the emulated VM).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _spread(stat: object) -> tuple[float, float, float]:
    assert isinstance(stat, dict) and set(stat) == {"median", "range"}, stat
    lo, hi = stat["range"]
    return float(lo), float(stat["median"]), float(hi)


#: The busy loop's command line (ringtool.bench.peers.busy_loop).
SPIN = [PY, "-c", "while True: pass"]


@pytest.mark.parametrize("share", [False, True], ids=["alone", "share-cpu"])
def test_bench_peers_json_rows(share: bool) -> None:
    proc = subprocess.Popen([*RINGTOOL, "bench", "peers", "--json", "--repeats", "1",
                             "--seconds", "0.3", *(["--share-cpu"] if share else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    spinners: list[int] = []
    if share:  # the bench's busy loop runs while the bench does, and is gone after it
        deadline = time.monotonic() + 60
        while not spinners and proc.poll() is None:
            assert time.monotonic() < deadline, "no busy loop started"
            spinners = children_of(proc.pid, SPIN)
            time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-2000:]
    assert len(spinners) == share
    assert not any(running(pid) for pid in spinners)
    rows = {r["tracer"]: r for r in map(json.loads, stdout.splitlines())}
    assert set(rows) == {t.name for t in tracers()}
    assert all(r["bench"] == "peers" for r in rows.values())
    assert all(r["tracer_cpu_shared"] is share for r in rows.values() if "skipped" not in r)
    for name, row in rows.items():
        if "skipped" in row:
            assert SETUP_SCRIPT in row["skipped"] and "apt-get install" in row["skipped"], row
            continue
        lo, med, hi = _spread(row["producer_per_s"])
        assert 0 < lo <= med <= hi, row
        load = row["loadavg_before_after"]
        assert len(load) == 6 and all(x >= 0 for x in load), row
        if name == "no tracer":
            continue
        lo, med, hi = _spread(row["added_ns"])
        assert lo <= med <= hi, row  # a difference: noise may make it negative
        assert _positive(_spread(row["tracer_cpu_ns_per_event"])[1]), row
        assert _positive(row["produced"]) and _positive(row["seen"]), row
        assert row["seen"] <= row["produced"], row  # only this producer's events count
    for name in ("no tracer", "ringtool --events open --json", "ringtool default sources --json"):
        assert "skipped" not in rows[name], rows[name]
