"""``ringtool bridge`` end to end: real exec/exit events read back with ``kmes-read``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.kmes import kmes_read, wait_for_socket
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.procs import run_ringtool

pytestmark = pytest.mark.kernel


def test_bridge_kmes_read_follow_and_resize(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    conf = tmp_path / "kmes.conf"
    conf.write_text("capacity = 1048576\n")  # big enough not to lap under load
    bridge = subprocess.Popen(
        [*RINGTOOL, "bridge", "--socket", str(sock), "--config", str(conf)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_socket(sock, bridge)
        reader = kmes_read(sock, "--json", "--follow", "--new")
        assert reader.stderr is not None
        line = reader.stderr.readline()  # printed once attached
        assert line.startswith("ringtool kmes-read: attached"), line
        time.sleep(0.3)  # asleep in futex_waitv
        pids = [subprocess.Popen(["/bin/true"]).pid for _ in range(5)]
        time.sleep(0.5)
        conf.write_text("capacity = 2097152\n")
        bridge.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        pids += [subprocess.Popen(["/bin/echo", "-n"]).pid for _ in range(5)]
        # Read until every pid's exec and exit came through (or 60 s: then SIGINT).
        watchdog = threading.Timer(60, reader.send_signal, args=(signal.SIGINT,))
        watchdog.start()
        events: list[dict[str, Any]] = []
        want = {("exec", p) for p in pids} | {("exit", p) for p in pids}
        assert reader.stdout is not None
        for raw in reader.stdout:
            ev = json.loads(raw)
            events.append(ev)
            want.discard((ev["name"], ev.get("data", {}).get("pid")))
            if not want:
                break
        watchdog.cancel()
        reader.send_signal(signal.SIGINT)
        out, err = reader.communicate(timeout=30)
        err = line + err
        assert reader.returncode == 0, err
        for x in out.splitlines():
            try:
                events.append(json.loads(x))
            except ValueError:  # a line cut by the SIGINT
                pass
        execs = [e for e in events if e["name"] == "exec" and e["data"]["pid"] in pids]
        exits = [e for e in events if e["name"] == "exit" and e["data"]["pid"] in pids]
        assert sorted(e["data"]["pid"] for e in execs) == sorted(pids)  # each exactly once
        assert sorted(e["data"]["pid"] for e in exits) == sorted(pids)
        assert {e["origin"] for e in execs} == {"ringbuf"}
        assert {e["origin"] for e in exits} == {"perf"}
        assert {e["data"]["comm"] for e in execs} == {"true", "echo"}
        for cpu in {e["cpu"] for e in events}:
            seqs = [e["seq"] for e in events if e["cpu"] == cpu]
            assert seqs == sorted(set(seqs))
        assert "1 generation changes" in err
    finally:
        bridge.send_signal(signal.SIGTERM)
        _out, berr = bridge.communicate(timeout=30)
    assert bridge.returncode == 0, berr
    assert "resized to 2097152" in berr
    assert not sock.exists()


def test_kmes_read_without_bridge_is_one_line(tmp_path: Path) -> None:
    res = run_ringtool("kmes-read", "--socket", str(tmp_path / "x.sock"), env={**os.environ})
    assert res.returncode == 1 and res.stderr.count("\n") == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_kmes_read_follow_stops_on_sigint_or_sigterm_even_if_started_ignoring_sigint(
    tmp_path: Path, sig: int
) -> None:
    """A job started with `&` from a script inherits SIGINT ignored; Python keeps it
    so, and `kmes-read --follow` could then only be killed (found when the suite ran
    as such a job: two tests waited for it for ever). Now both signals end it with its
    summary."""
    sock = tmp_path / "kmes.sock"
    bridge = subprocess.Popen([*RINGTOOL, "bridge", "--socket", str(sock)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        wait_for_socket(sock, bridge)
        reader = subprocess.Popen(
            [*RINGTOOL, "kmes-read", "--socket", str(sock), "--json", "--follow"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )  # fmt: skip
        assert reader.stderr is not None
        assert reader.stderr.readline().startswith("ringtool kmes-read: attached")
        time.sleep(0.3)
        reader.send_signal(sig)
        try:
            _, err = reader.communicate(timeout=20)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.communicate()
        assert reader.returncode == 0, err
        assert "Traceback" not in err and err.startswith("cpu "), err  # the summary
    finally:
        bridge.send_signal(signal.SIGINT)
        bridge.wait(30)
