"""``ringtool trace --csv`` with stdout on a terminal (a pty): a real exec of a file
named ``e\\x1b]0;KPWN\\x07x`` shows up with its control characters escaped; no ESC or
BEL byte reaches the terminal. (Into a file or pipe the CSV stays exact:
test_trace_csv.py.)"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT

# host_only: the dashboard's (or the columns') drawing and keys on a terminal, nothing
# of the kernel's version; the maps and rings they read are tested on every kernel
# (the all_kernels tests). CI runs these on the host.
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]
NAME = "e\x1b]0;KPWN\x07x"


def _read_until(fd: int, proc: subprocess.Popen[bytes], want: bytes, out: bytearray) -> None:
    end = time.monotonic() + 120
    while want not in out:
        assert proc.poll() is None and time.monotonic() < end, bytes(out[-2000:])
        if select.select([fd], [], [], 0.2)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:  # EIO: the terminal's other side closed
                return


def test_csv_on_a_terminal_escapes_a_hostile_exec_name(tmp_path: Path) -> None:
    hostile = tmp_path / NAME
    shutil.copy("/bin/true", hostile)
    main, sub = pty.openpty()
    proc = subprocess.Popen(
        [*RINGTOOL, "trace", "--csv", "--events", "exec", "--fields", "type,comm,filename",
         "-d", "120"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sub, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(sub)
    out = bytearray()
    try:
        _read_until(main, proc, b"type,comm,filename", out)  # the header: tracing
        deadline = time.monotonic() + 60
        while b"KPWN" not in out:
            assert time.monotonic() < deadline, bytes(out[-2000:])
            subprocess.run([str(hostile)], check=True)
            _read_until(main, proc, b"\n", out)
            time.sleep(0.2)
            while select.select([main], [], [], 0.2)[0]:
                out += os.read(main, 65536)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        os.close(main)
    assert b"e\\x1b]0;KPWN\\x07x" in out, bytes(out[-2000:])
    assert b"\x1b" not in out and b"\x07" not in out
