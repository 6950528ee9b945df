"""Signals while ``ringtool trace`` starts: held from the first line of ``main``
(:class:`ringtool.trace.signals.StartSignals`) and acted on once the trace runs.

The trace is held in its start-up by a ``--pcap`` FIFO whose pipe is full (its header
write blocks before any BPF program is compiled). Before: SIGUSR1 there killed it
(exit 138, nothing written), SIGTERM killed it (-15), SIGINT ended it at once (130)
with no start line and no summary."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from ringtool.trace.runner import STOPPED_AT_START
from tests.helpers.paths import RINGTOOL
from tests.helpers.procs import Lines, stop
from tests.helpers.startup import FullFifo, wait_blocked_writing
from tests.helpers.tmux import RUN, Terminal, needs_tmux
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


def _stopped_at_start(output: str, tmp_path: Path) -> tuple[list[str], str]:
    """``trace OUTPUT`` held in its start-up by a full ``--pcap`` FIFO, a real SIGINT
    (Ctrl-C) sent there; its stdout lines and stderr once it exited 0."""
    fifo = FullFifo(tmp_path / "cap.pcapng")
    argv = ["trace", output, "--events", "net", "-i", "lo", "--pcap", str(fifo.path), "--force",
            "-d", "30"]  # fmt: skip
    run = Lines([*RINGTOOL, *argv])
    try:
        wait_blocked_writing(run.proc.pid)
        run.proc.send_signal(signal.SIGINT)
        fifo.drain()
        run.proc.wait(240)
        run.join()
    finally:
        stop(run.proc)
        fifo.close()
    assert run.proc.returncode == 0, (run.proc.returncode, run.err)
    assert "Traceback" not in run.err and "% CPU" not in run.err, run.err
    return run.lines, run.err


def test_ctrl_c_during_start_up_is_one_note_not_a_cost(tmp_path: Path) -> None:
    """Columns: the start lines, then one note; no summary of a run that never read
    (before: a summary whose cost line said ``ringtool 91.0% CPU (user 0.00s, sys
    0.00s)``: start-up's CPU over the milliseconds between attach and detach)."""
    lines, err = _stopped_at_start("--no-tui", tmp_path)
    told = err.splitlines()
    assert told[:3] == ["sources: net", "Tracing... Ctrl-C to end.", f"note: {STOPPED_AT_START}"]
    # a packet on lo in the microseconds the source was attached would be summarised
    assert len(told) == 3 or not told[3].startswith("0 events"), told
    assert lines[0].split()[:3] == ["TS", "CPU", "PID"]


def test_ctrl_c_during_start_up_keeps_the_json_summary_without_a_cost(tmp_path: Path) -> None:
    lines, err = _stopped_at_start("--json", tmp_path)
    told = told_json(err)
    assert [o["type"] for o in told] == ["start", "note"], told
    assert told[1]["text"] == STOPPED_AT_START
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary" and "cost" not in summary, summary


@needs_tmux
def test_ctrl_c_while_the_dashboard_starts_leaves_one_note(tmp_path: Path) -> None:
    """The dashboard (a real terminal, tmux) stopped while it starts: the terminal is
    left with the one note, no summary."""
    fifo = FullFifo(tmp_path / "cap.pcapng")
    cmd = (f"{RUN} trace --events net -i lo --pcap {fifo.path} --force -d 30; "
           "echo EXIT=$?; sleep 600")  # fmt: skip
    term = Terminal(cmd, 100, 30)
    try:
        shell = term.shell_pid()
        children = Path(f"/proc/{shell}/task/{shell}/children")
        deadline = time.monotonic() + 60
        while not children.read_text().split():
            assert time.monotonic() < deadline, "ringtool did not start"
            time.sleep(0.05)
        pid = int(children.read_text().split()[0])
        wait_blocked_writing(pid)
        os.kill(pid, signal.SIGINT)
        fifo.drain()
        screen = term.wait_for("EXIT=0", timeout=240)
    finally:
        term.close()
        fifo.close()
    told = [line for line in screen.splitlines() if line.strip()]
    assert told == [f"ringtool trace: {STOPPED_AT_START}", "EXIT=0"], screen
