"""Open flags as text, and which optional tracepoints a kernel has (pure, no BPF)."""

from __future__ import annotations

import os
from pathlib import Path

from ringtool.event.open_flags import flag_text, mode_text, names_of
from ringtool.programs.tp_presence import presence_defines
from ringtool.trace.reading.sources import SOURCE_NAMED

OPEN, EXEC = SOURCE_NAMED["open"].needs.optional, SOURCE_NAMED["exec"].needs.optional


def test_flags_by_name_access_mode_first() -> None:
    assert flag_text(os.O_RDONLY) == "O_RDONLY"
    assert flag_text(os.O_WRONLY | os.O_CREAT | os.O_TRUNC) == "O_WRONLY|O_CREAT|O_TRUNC"
    assert flag_text(os.O_RDWR | os.O_CLOEXEC | os.O_APPEND) == "O_RDWR|O_APPEND|O_CLOEXEC"
    # multi-bit flags are named whole, not as their parts
    assert flag_text(os.O_RDWR | os.O_TMPFILE) == "O_RDWR|O_TMPFILE"
    assert flag_text(os.O_WRONLY | os.O_SYNC) == "O_WRONLY|O_SYNC"
    assert flag_text(os.O_DSYNC) == "O_RDONLY|O_DSYNC"
    # bits without a name stay visible, as one number
    assert flag_text(0x80000000 | os.O_EXCL) == "O_RDONLY|O_EXCL|0x80000000"
    assert flag_text(3) == "0x3"


def test_mode_only_where_the_kernel_uses_it() -> None:
    assert mode_text(os.O_CREAT, 0o640) == " 0640"
    assert mode_text(os.O_RDWR | os.O_TMPFILE, 0o600) == " 0600"
    assert mode_text(os.O_RDONLY, 0o777) == ""
    assert mode_text(None, 0o644) == "" and mode_text(os.O_CREAT, None) == ""


def test_a_directory_open_has_no_mode() -> None:
    """O_TMPFILE holds O_DIRECTORY's bit: a plain O_DIRECTORY open is not a tmpfile."""
    assert mode_text(os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, 0) == ""
    assert mode_text(os.O_DIRECTORY | os.O_CREAT, 0o700) == " 0700"


def test_names_of_a_column() -> None:
    assert names_of([0, os.O_WRONLY, None, 0]) == [" O_RDONLY", " O_WRONLY", "", " O_RDONLY"]


def test_presence_from_tracefs(tmp_path: Path) -> None:
    sys_dir = tmp_path / "events" / "syscalls"
    for name in ("sys_enter_openat2", "sys_exit_openat2", "sys_enter_creat"):
        (sys_dir / name).mkdir(parents=True)  # creat's exit is missing: not traced
    assert presence_defines(OPEN, [tmp_path]) == {
        "TRACE_HAVE_OPEN": 0, "TRACE_HAVE_CREAT": 0, "TRACE_HAVE_OPENAT2": 1,
        "TRACE_HAVE_OPEN_BY_HANDLE_AT": 0,
    }  # fmt: skip
    assert presence_defines(EXEC, [tmp_path]) == {}
    assert set(presence_defines(OPEN, [tmp_path / "none"]).values()) == {0}
