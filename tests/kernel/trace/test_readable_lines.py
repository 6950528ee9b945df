"""``ringtool trace --no-tui -T`` end to end as people read it: dated times with
milliseconds, a failed open's error by name, a directory open without a mode, and a
syscall newer than BCC's table (close_range, 436) by its name in the summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.trace import Trace

# host_only: the dashboard's (or the columns') drawing and keys on a terminal, nothing
# of the kernel's version; the maps and rings they read are tested on every kernel
# (the all_kernels tests). CI runs these on the host.
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

COMM = "rt-readable"
#: The workload: its comm, a missing file, a directory, many close_range(2) calls.
CHILD = r"""
import ctypes, os, sys
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[1])
try:
    os.open(sys.argv[2], os.O_RDONLY)
except FileNotFoundError:
    pass
os.close(os.open(sys.argv[3], os.O_RDONLY | os.O_DIRECTORY))
libc = ctypes.CDLL(None, use_errno=True)
for _ in range(20000):
    libc.syscall(436, 1000, 1000, 0)  # close_range of no open fd
"""


def test_columns_read_as_people_read_them(tmp_path: Path) -> None:
    missing, folder = tmp_path / "missing.txt", tmp_path / "folder"
    folder.mkdir()
    proc = Trace("--no-tui", "-T", "-d", "6", "--events", "open,syscalls", "-c", COMM)
    subprocess.run([sys.executable, "-c", CHILD, COMM, str(missing), str(folder)], check=True)
    lines, err = proc.finish()
    assert lines[0].split()[:3] == ["TS", "CPU", "PID"]
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ", ln) for ln in lines[1:]), lines
    (gone,) = [ln for ln in lines if f" {missing} " in ln]
    assert gone.endswith(" O_RDONLY|O_CLOEXEC = -2 ENOENT (openat)") or gone.endswith(
        " O_RDONLY = -2 ENOENT (openat)"
    ), gone
    (opened,) = [ln for ln in lines if f" {folder} " in ln]
    assert "O_DIRECTORY" in opened and " 0000 " not in opened, opened
    assert re.search(r"^  close_range +\d+ calls", err, re.MULTILINE), err
    assert "unknown" not in err
