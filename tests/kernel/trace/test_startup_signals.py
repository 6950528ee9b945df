"""Signals while ``ringtool trace`` starts: held from the first line of ``main``
(:class:`ringtool.trace.signals.StartSignals`) and acted on once the trace runs.

The trace is held in its start-up by a ``--pcap`` FIFO whose pipe is full (its header
write blocks before any BPF program is compiled). Before: SIGUSR1 there killed it
(exit 138, nothing written), SIGTERM killed it (-15), SIGINT ended it at once (130)
with no start line and no summary."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL
from tests.helpers.procs import Lines, stop
from tests.helpers.startup import FullFifo, wait_blocked_writing
from tests.helpers.trace import told_json

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # signals, paths, modes: not the kernel


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_start_up_is_honoured(sig: signal.Signals, tmp_path: Path) -> None:
    fifo = FullFifo(tmp_path / "cap.pcapng")
    argv = ["trace", "--json", "--flight-recorder", "64K", "--events", "net", "-i", "lo",
            "--pcap", str(fifo.path), "--force", "-d", "2"]  # fmt: skip
    run = Lines([*RINGTOOL, *argv])
    try:
        wait_blocked_writing(run.proc.pid)
        run.proc.send_signal(sig)
        fifo.drain()
        run.proc.wait(240)
        run.join()
    finally:
        stop(run.proc)
        fifo.close()
    err = run.err
    assert run.proc.returncode == 0, (run.proc.returncode, err)
    assert "Traceback" not in err
    told = told_json(err)
    assert told and told[0]["type"] == "start", err  # it started, then acted on sig
    summary = json.loads(run.lines[-1])
    assert summary["type"] == "summary", run.lines[-3:]
    assert fifo.read > 0  # the capture's header (and end) went to the FIFO
