"""CPU hotplug and the KMES bridge, for real (VM only, like the ``hotplug`` tests of
tests/kernel/readers/test_hotplug.py): a CPU that comes online while ``ringtool bridge``
runs gets a KMES buffer, announced to attached readers by a generation change;
``kmes-read --follow`` picks it up and reads the events that CPU's processes make.
"""

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

from tests.helpers.hotplug import set_cpu1, vm_only
from tests.helpers.kmes import kmes_read, wait_for_socket
from tests.helpers.paths import RINGTOOL, ROOT

pytestmark = pytest.mark.kernel


def _on_cpu1() -> None:
    os.sched_setaffinity(0, {1})


@pytest.mark.hotplug
@vm_only
def test_vm_bridge_buffer_for_cpu_that_comes_online(tmp_path: Path, cpu1_restored: None) -> None:
    set_cpu1(False)
    sock = tmp_path / "kmes.sock"
    conf = tmp_path / "kmes.conf"
    conf.write_text("capacity = 1048576\n")
    bridge = subprocess.Popen(
        [*RINGTOOL, "bridge", "--socket", str(sock), "--config", str(conf)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    reader: subprocess.Popen[str] | None = None
    try:
        wait_for_socket(sock, bridge, timeout=300)  # BCC compiles slowly under emulation
        reader = kmes_read(sock, "--json", "--follow", "--new")
        assert reader.stderr is not None and reader.stdout is not None
        line = reader.stderr.readline()
        assert "attached" in line and "CPUs [0]" in line, line
        set_cpu1(True)
        time.sleep(1.5)  # the bridge's hotplug check runs at most once a second
        pids: list[int] = []
        for _ in range(10):
            p = subprocess.Popen(["/bin/true"], preexec_fn=_on_cpu1)
            p.wait()
            pids.append(p.pid)
        watchdog = threading.Timer(120, reader.send_signal, args=(signal.SIGINT,))
        watchdog.start()
        want = set(pids)
        seen: list[dict[str, Any]] = []
        for raw in reader.stdout:
            ev = json.loads(raw)
            seen.append(ev)
            if ev["name"] == "exec" and ev["cpu"] == 1:
                want.discard(ev.get("data", {}).get("pid"))
            if not want:
                break
        watchdog.cancel()
        reader.send_signal(signal.SIGINT)
        _out, err = reader.communicate(timeout=60)
        assert not want, f"exec on CPU 1 not read for {sorted(want)}; {len(seen)} events; {err}"
        assert "bridge added CPU(s) [1]" in line + err, err
    finally:
        if reader is not None and reader.poll() is None:
            reader.kill()
            reader.wait()
        bridge.send_signal(signal.SIGINT)
        _bout, berr = bridge.communicate(timeout=120)
    assert "1 CPUs" in berr and "CPU 1 came online: new KMES buffer" in berr, berr
    assert "Traceback" not in berr
