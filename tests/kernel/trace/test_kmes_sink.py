"""``ringtool trace --kmes SOCKET``: trace records published through a KMES bridge."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from ringtool.event.kmes_types import TRACE_EVENT_BASE
from ringtool.event.layout import load_layout
from ringtool.kmes.attach import attach
from tests.helpers.paths import RINGTOOL
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel


def test_trace_publishes_to_kmes(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    proc = Trace("--json", "--events", "exec", "--kmes", str(sock))  # ended below: SIGINT
    readers = attach(str(sock), start="head")
    try:
        cat = subprocess.Popen(["/bin/cat", "/dev/null"])
        cat.wait()
        lay = load_layout()
        found = []
        deadline = time.monotonic() + 10
        while not found and time.monotonic() < deadline:
            for r in readers:
                for ev in r.drain():
                    if ev.event_type != TRACE_EVENT_BASE + lay.type_id("exec"):
                        continue
                    rec = np.frombuffer(bytes(ev.payload), dtype=lay.event, count=1)[0]
                    if rec["h"]["pid"] == cat.pid:
                        found.append(rec)
            time.sleep(0.1)
        assert found, "cat's exec never reached the KMES buffers"
        assert found[0]["data"].split(b"\0")[0] == b"/bin/cat"
        assert found[0]["h"]["comm"] == b"cat"
    finally:
        for r in readers:
            r.close()
        proc.signal(signal.SIGINT)  # not -d: an emulated guest's attach can take seconds
    lines, _ = proc.finish()
    assert lines[-1].startswith('{"type": "summary"')


def test_kmes_read_decodes_trace_events(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    # -d: a bound, not the test's pace (SIGINT ends it once read: under the VM's
    # emulation starting kmes-read alone took longer than the 4 s this once had)
    proc = Trace("--json", "-d", "120", "--events", "exec", "--kmes", str(sock))
    try:
        deadline = time.monotonic() + 90
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        cat = subprocess.Popen(["/bin/cat", "/dev/null"])
        cat.wait()
        ours: list[dict[str, object]] = []
        while not ours and time.monotonic() < deadline:
            time.sleep(0.2)
            res = subprocess.run(
                [*RINGTOOL, "kmes-read", "--socket", str(sock), "--json"],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert res.returncode == 0, res.stderr
            events = [json.loads(line) for line in res.stdout.splitlines()]
            ours = [
                e for e in events
                if e["name"] == "exec" and e["data"]["pid"] == cat.pid  # type: ignore[index]
            ]  # fmt: skip
        assert ours, "kmes-read did not show cat's exec"
        assert ours[0]["data"]["filename"] == "/bin/cat"  # type: ignore[index]
        assert ours[0]["origin"] == "ringbuf" and "payload_hex" not in ours[0]
    finally:
        proc.signal(signal.SIGINT)
        proc.finish()
