"""``bench trace``'s count of modules compiled at every start (no current bytecode)."""

from __future__ import annotations

import os
import py_compile
from pathlib import Path

from ringtool.bench.trace_start import stale_bytecode


def test_modules_without_current_bytecode_are_counted(tmp_path: Path) -> None:
    for name in ("a.py", "b.py", "sub/c.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert stale_bytecode(tmp_path) == 3
    py_compile.compile(str(tmp_path / "a.py"))
    py_compile.compile(str(tmp_path / "sub/c.py"))
    assert stale_bytecode(tmp_path) == 1
    later = (tmp_path / "a.py").stat().st_mtime + 10  # edited after its bytecode
    os.utime(tmp_path / "a.py", (later, later))
    assert stale_bytecode(tmp_path) == 2
