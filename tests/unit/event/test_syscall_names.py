"""Syscall names come from BCC's table without importing BCC (whose import loads
libbcc: a good part of a warm start)."""

from __future__ import annotations

import platform
import subprocess
import sys

CHECK = """
import sys
from ringtool.event.syscalls import syscall_namer
name = syscall_namer()
print(name(0), name(59), name(99999), "bcc" in sys.modules)
"""


def test_names_without_importing_bcc() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out[-1] == "False"
    if platform.machine() == "x86_64":  # the numbers of the table BCC ships
        assert out[:2] == ["read", "execve"]
        assert out[2] in ("sys_99999", "[unknown:")  # BCC names an unknown number its way
