"""A socket path the user gave with terminal escapes in it is shown escaped: the
bridge's ``serving ...`` line and ``kmes-read``'s ``attached to ...`` line pass it
through :func:`ringtool.cli.validate.shown` (before: the ESC reached the terminal)."""

from __future__ import annotations

import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.helpers.kmes import wait_for_socket
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.procs import run_ringtool, stop

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # signals, paths, modes: not the kernel

ESC_NAME = "k\x1b[2J\x1b]0;owned\x07.sock"


def test_an_escape_in_the_socket_path_is_shown_escaped() -> None:
    with tempfile.TemporaryDirectory(prefix="rt-esc-", dir="/tmp") as d:
        sock = Path(d) / ESC_NAME
        bridge = subprocess.Popen([*RINGTOOL, "bridge", "-q", "--socket", str(sock)], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)  # fmt: skip
        try:
            wait_for_socket(sock, bridge)
            read = run_ringtool("kmes-read", "--socket", str(sock), timeout=60)
        finally:
            stop(bridge, signal.SIGINT, wait=30)
        assert bridge.stderr is not None
        err = bridge.stderr.read()
        assert "serving " in err and "\\x1b[2J\\x1b]0;owned\\x07" in err, err
        assert "attached to " in read.stderr and "\\x1b[2J" in read.stderr, read.stderr
        assert "\x1b" not in err + read.stderr and "\x07" not in err + read.stderr
