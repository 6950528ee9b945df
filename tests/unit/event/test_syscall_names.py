"""Syscall names come from the running kernel's headers before BCC's older table."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from ringtool.event.syscalls import header_paths, parse_header, syscall_namer, syscall_table

HEADER = """\
#ifndef _ASM_UNISTD_64_H
#define _ASM_UNISTD_64_H
#define __NR_read 0
#define __NR_close_range 436
#define __NR3264_fcntl 25
#define __NR_fcntl __NR3264_fcntl
#define __NR_weird (__NR_SYSCALL_BASE + 1)
#define __NR_syscalls 451
#endif
"""


def test_a_header_names_its_numbers() -> None:
    assert parse_header(HEADER) == {0: "read", 436: "close_range", 25: "fcntl"}


def test_the_first_header_wins_and_later_ones_fill_in(tmp_path: Path) -> None:
    new, old = tmp_path / "new.h", tmp_path / "old.h"
    new.write_text("#define __NR_read 0\n#define __NR_futex_waitv 449\n")
    old.write_text("#define __NR_oldname 0\n#define __NR_write 1\n")
    missing = tmp_path / "absent.h"
    table = syscall_table((missing, new, old), bcc=False)
    assert dict(table) == {0: "read", 1: "write", 449: "futex_waitv"}


def test_the_running_kernel_names_every_number_of_its_header() -> None:
    name = syscall_namer()
    assert name(436) == "close_range"  # BCC 0.26's table stops before it
    assert name(1 << 20) == f"sys_{1 << 20}"
    header = next((p for p in header_paths() if p.name == "unistd_64.h" and p.exists()), None)
    if header is None:
        pytest.skip("no unistd_64.h of this kernel or C library installed")
    listed = parse_header(header.read_text())
    assert listed and all(name(nr) == n for nr, n in listed.items())


def test_an_architecture_reads_only_its_own_headers() -> None:
    x86 = header_paths("6.1.0", "x86_64")
    assert [p.name for p in x86] == ["unistd_64.h", "unistd_64.h"]
    assert str(x86[0]).startswith("/lib/modules/6.1.0/build/arch/x86/")
    assert header_paths("6.1.0", "aarch64")[-1].name == "unistd.h"  # asm-generic numbers
    assert header_paths("6.1.0", "mips64") == []  # unknown: BCC's table alone


#: a namer in a fresh interpreter: names, and whether the ``bcc`` package got imported
_FRESH = """
import sys
from ringtool.event.syscalls import syscall_namer
name = syscall_namer()
print(name(0), name(59), name(99999), "bcc" in sys.modules)
"""


def test_names_without_importing_bcc() -> None:
    # importing bcc loads libbcc (about 0.3 s of a warm start): BCC's table is read
    # from its file
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out[-1] == "False"
    if platform.machine() == "x86_64":
        assert out[:3] == ["read", "execve", "sys_99999"]
