"""A real terminal for the TUI tests: tmux sessions, their screens, bounded waits."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from tests.helpers.paths import ROOT

# Every pane command starts with `unset COLUMNS LINES`: pytest exports COLUMNS/LINES,
# tmux passes them on, and rich would size the dashboard by them instead of the pane.
RUN = f"unset COLUMNS LINES; cd {ROOT} && {sys.executable} -m ringtool.cli.main"

#: Skips a test where tmux is not installed.
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for_screen(
    session: str,
    *needles: str,
    absent: tuple[str, ...] = (),
    timeout: float = 60,
    match: Callable[[str], bool] | None = None,
) -> str:
    """The first screen with every needle, none of ``absent`` and, given ``match``,
    on which it holds (a capture may catch a redraw half done: what one capture lacks,
    a later one has)."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if (
            all(n in screen for n in needles)
            and not any(a in screen for a in absent)
            and (match is None or match(screen))
        ):
            return screen
        time.sleep(0.3)
    what = f"{needles} (without {absent}{', with match' if match else ''})"
    raise AssertionError(f"{what} not on screen:\n{screen}")
