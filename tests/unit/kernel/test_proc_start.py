"""Whether ``/proc`` lists every process (:func:`proc_hides_processes`), read from
mountinfo lines built by hand: a hidden process must never be taken for a gone one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringtool.kernel.proc_start import proc_hides_processes

PROC = "22 27 0:21 / /proc rw,relatime - proc proc rw{}\n"
SYS = "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"


@pytest.mark.parametrize(
    ("lines", "hides"),
    [
        ([SYS, PROC.format("")], False),
        ([PROC.format(",hidepid=0")], False),
        ([PROC.format(",hidepid=off")], False),
        ([PROC.format(",hidepid=invisible")], True),
        ([PROC.format(",hidepid=2,gid=5")], True),
        ([PROC.format(",subset=pid,hidepid=noaccess")], True),
        ([PROC.format(""), PROC.format(",hidepid=2")], True),  # mounted on top: it counts
        ([PROC.format(",hidepid=2"), PROC.format("")], False),
        ([SYS], True),  # no /proc: nothing can be told
        (["garbage\n"], True),
    ],
)
def test_hidden_processes_are_told(tmp_path: Path, lines: list[str], hides: bool) -> None:
    f = tmp_path / "mountinfo"
    f.write_text("".join(lines))
    assert proc_hides_processes(str(f)) is hides


def test_an_unreadable_mountinfo_is_taken_as_hiding(tmp_path: Path) -> None:
    assert proc_hides_processes(str(tmp_path / "missing")) is True
