"""SIGUSR1 never kills ringtool: ``pkill -USR1 ringtool`` (dump every flight recorder)
leaves a running bridge alone. Before: the bridge died of it (exit 138, no cleanup)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.helpers.kmes import bridge

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # signals, paths, modes: not the kernel


def test_sigusr1_does_not_kill_the_bridge(tmp_path: Path) -> None:
    with bridge(tmp_path) as b:
        b.proc.send_signal(signal.SIGUSR1)  # a default action would end it here
        b.proc.send_signal(signal.SIGTERM)
        assert b.proc.wait(60) == 0, b.stderr_text()  # SIGTERM's clean stop, not SIGUSR1's
