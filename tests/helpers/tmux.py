"""A real terminal for the dashboard tests: a command in a detached tmux session on a
tmux server of its own.

Each :class:`Terminal` has its own server (its socket in a temporary directory, no
configuration file), so a test never shares a tmux server with another test or with
anybody else's tmux on the machine. On the shared default server, killing the last
session makes the server exit, and a ``new-session`` that connects meanwhile (the next
test's, a moment later) fails with "server exited unexpectedly": that test then waited
a minute for a dashboard that was never started.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

# Every pane command starts with `unset COLUMNS LINES`: pytest exports COLUMNS/LINES,
# tmux passes them on, and rich would size the dashboard by them instead of the pane.
RUN = f"unset COLUMNS LINES; cd {ROOT} && {sys.executable} -m ringtool"

#: Skips a test where tmux is not installed.
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """``cmd`` (a shell command) in a ``width`` x ``height`` tmux pane; :meth:`close`
    ends the server and everything in the pane. Starting fails at once (AssertionError
    with tmux's message) when tmux cannot start the session."""

    def __init__(self, cmd: str, width: int, height: int) -> None:
        # a short path: a unix socket's path has at most 107 bytes
        self._dir = Path(tempfile.mkdtemp(prefix="rt-tmux-", dir="/tmp"))
        self.session = "rt"
        try:
            self._run("new-session", "-d", "-s", self.session, "-x", str(width),
                      "-y", str(height), cmd, check=True)  # fmt: skip
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise

    def _run(self, *args: str, check: bool = False) -> str:
        sock = str(self._dir / "sock")
        proc = subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def send(self, *keys: str) -> None:
        """``tmux send-keys``: key names (``Escape``, ``F1``, ``Enter``) or text."""
        self._run("send-keys", "-t", self.session, *keys, check=True)

    def screen(self) -> str:
        """What the pane shows now."""
        return self._run("capture-pane", "-p", "-t", self.session)

    def shell_pid(self) -> int:
        """The pid of the pane's shell (which runs ``cmd``)."""
        return int(self._run("list-panes", "-t", self.session, "-F", "#{pane_pid}").split()[0])

    def wait_for(
        self,
        *needles: str,
        absent: tuple[str, ...] = (),
        timeout: float = 180,  # a first screen waits for BCC: minutes when emulated
        match: Callable[[str], bool] | None = None,
    ) -> str:
        """The first screen with every needle, none of ``absent`` and, given ``match``,
        on which it holds (a capture may catch a redraw half done: what one capture
        lacks, a later one has)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if (
                all(n in screen for n in needles)
                and not any(a in screen for a in absent)
                and (match is None or match(screen))
            ):
                return screen
            time.sleep(0.3)
        what = f"{needles} (without {absent}{', with match' if match else ''})"
        raise AssertionError(f"{what} not on screen:\n{screen}")

    def close(self) -> None:
        """End the server (the pane's processes get SIGHUP) and remove its socket."""
        try:
            self._run("kill-server")
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
