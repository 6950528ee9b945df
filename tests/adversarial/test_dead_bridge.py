"""``kmes-read --follow`` and a bridge killed with SIGKILL (docs/kmes.md §8.4): one line
saying so, no line per retry, and reading resumes when a new bridge serves the same
socket."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.helpers.kmes import Bridge, kmes_read
from tests.helpers.procs import LineReader, spawn_execs, stop

pytestmark = [pytest.mark.adversarial, pytest.mark.kernel]


def exec_pids(line: str, comm: str) -> int | None:
    try:
        ev = json.loads(line)
    except ValueError:
        return None
    data = ev.get("data") or {}
    if ev.get("name") == "exec" and data.get("comm") == comm:
        return int(data["pid"])
    return None


def await_execs(out: LineReader, tmp: Path, comm: str, timeout: float) -> set[int]:
    """Run 5 execs named ``comm``; the pids kmes-read did not print within ``timeout``."""
    gen = spawn_execs(tmp, comm, 5, 50)
    try:
        gen.wait(30)
    finally:
        stop(gen, signal.SIGKILL)
    want = set(json.loads((tmp / f"{comm}.json").read_text()))
    seen: set[int] = set()

    def got_all(line: str) -> bool:
        pid = exec_pids(line, comm)
        if pid is not None:
            seen.add(pid)
        return want <= seen

    out.until(got_all, timeout)
    return want - seen


def test_follow_reports_a_killed_bridge_once_and_reattaches(tmp_path: Path) -> None:

    sock = tmp_path / "kmes.sock"
    conf = tmp_path / "kmes.conf"
    conf.write_text("capacity = 1048576\n")
    first = Bridge(sock, conf)
    second: Bridge | None = None
    reader = kmes_read(sock, "--follow", "--json", "--new")
    try:
        err, out = LineReader(reader.stderr), LineReader(reader.stdout)
        assert err.until(lambda s: "attached" in s, 30), err.seen
        assert not await_execs(out, tmp_path, "advA", 15), "events before the kill never came"
        first.proc.kill()  # SIGKILL: no goodbye from the bridge
        first.proc.wait(10)
        said = err.get(10.0)
        assert said is not None, "kmes-read said nothing within 10 s after the bridge died"
        assert reader.poll() is None, f"kmes-read --follow exited: {err.seen}"
        more = err.get(3.0)
        assert more is None, f"more than one line while the bridge is down: {said!r}, {more!r}"
        second = Bridge(sock, conf)
        missing = await_execs(out, tmp_path, "advB", 20)
        assert not missing, f"after the new bridge came up, execs {missing} never printed"
        err.drain()
        if len(err.seen) < 3:  # stderr is another pipe: its line may trail the events
            err.get(5.0)
        assert len(err.seen) >= 3, f"no line about the re-attach: {err.seen}"
        reader.send_signal(signal.SIGINT)
        reader.wait(15)
        assert reader.returncode == 0, err.seen
    finally:
        stop(reader, signal.SIGKILL, 5)
        first.close()
        if second is not None:
            second.close()
