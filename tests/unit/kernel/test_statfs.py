"""statfs(2)'s file system type of a path (kernel/statfs.py)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from ringtool.kernel.statfs import fs_type

PROC_SUPER_MAGIC = 0x9FA0  # linux/magic.h


def test_proc_is_procfs() -> None:
    assert fs_type("/proc") == PROC_SUPER_MAGIC


def test_a_missing_path_is_oserror_with_its_errno(tmp_path: Path) -> None:
    with pytest.raises(OSError) as raised:
        fs_type(str(tmp_path / "missing"))
    assert raised.value.errno == errno.ENOENT
