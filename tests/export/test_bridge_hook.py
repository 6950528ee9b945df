"""``ringtool bridge --export --metrics``: the bridge's exec/exit events reach the stream
(every tapped event exported or counted) and its KMES counters are served."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer, free_port
from tests.helpers.stream_check import read_stream

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel


def test_bridge_exports_exec_events(nats: NatsServer, tmp_path: Path) -> None:
    sock, port = tmp_path / "kmes.sock", free_port()
    conf = tmp_path / "kmes.conf"
    conf.write_text("capacity = 1M\n")
    bridge = subprocess.Popen(
        [*RINGTOOL, "bridge", "--socket", str(sock), "--config", str(conf), "--export",
         nats.url, "--host-name", "br1", "--metrics", f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert bridge.poll() is None, bridge.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pids = [subprocess.Popen(["/bin/true"]).pid for _ in range(10)]
        time.sleep(1.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert 'ringtool_kmes_written_total{cpu="0",host="br1"}' in text
        assert 'ringtool_events_total{host="br1",source="exec",type="exec"}' in text
    finally:
        bridge.send_signal(signal.SIGINT)
        _, err = bridge.communicate(timeout=60)
    assert bridge.returncode == 0, err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if "export:" in x and "exported" in x)
    words = line.split()
    events = int(words[words.index("export:") + 1])
    exported = int(words[words.index("exported,") - 1])
    dropped = int(words[words.index("export_dropped") - 1])
    assert events == exported + dropped and dropped == 0, line
    content = read_stream(nats)
    assert content.count("br1") == exported
    execs = [json.loads(v) for v in content.lines("br1")]
    mine = [e for e in execs if e["type"] == "exec" and e.get("pid") in pids]
    assert len(mine) == len(pids), execs[:3]
    assert all(e["filename"] == "/bin/true" for e in mine)
    assert content.summaries["br1"]["exported"] == exported
