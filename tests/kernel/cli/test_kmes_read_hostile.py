"""``kmes-read`` prints what traced processes chose without letting it act on the
terminal: a real exec of a file named ``e\\x1b]0;KPWN\\x07x`` (OSC 0: set the window
title) goes through a real ``ringtool bridge``; kmes-read's text line shows the name
with its control characters escaped, and no ESC or BEL byte reaches stdout."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT

pytestmark = pytest.mark.kernel

NAME = "e\x1b]0;KPWN\x07x"


def test_kmes_read_escapes_a_hostile_exec_name(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    bridge = subprocess.Popen(
        [*RINGTOOL, "bridge", "--socket", str(sock)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        end = time.monotonic() + 120
        while not sock.exists():
            assert bridge.poll() is None, bridge.communicate()[1]
            assert time.monotonic() < end, "bridge socket never appeared"
            time.sleep(0.05)
        hostile = tmp_path / NAME
        shutil.copy("/bin/true", hostile)
        subprocess.run([str(hostile)], check=True)
        time.sleep(0.5)
        res = subprocess.run(
            [*RINGTOOL, "kmes-read", "--socket", str(sock)],
            cwd=ROOT, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        bridge.terminate()
        bridge.wait(timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.split(b"\n") if b"KPWN" in ln]
    assert lines, res.stdout[-2000:]
    assert any(b"e\\x1b]0;KPWN\\x07x" in ln for ln in lines), lines
    assert b"\x1b" not in res.stdout and b"\x07" not in res.stdout
    assert b"\x1b" not in res.stderr and b"\x07" not in res.stderr
