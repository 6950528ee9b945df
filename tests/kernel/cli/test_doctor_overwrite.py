"""`ringtool doctor` says which ring a flight recorder gets on this kernel, and whether
markers work (USER_RINGBUF, clang, bpftool)."""

from __future__ import annotations

import subprocess

import pytest

from ringtool.kernel.ringbuf_map import has_ringbuf_overwrite, has_user_ringbuf
from ringtool.programs.clang_loader import missing_tools
from tests.helpers.paths import RINGTOOL

pytestmark = pytest.mark.kernel


def test_doctor_names_the_flight_recorder_ring() -> None:
    res = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120)
    line = next(ln for ln in res.stdout.splitlines() if "ringbuf overwrite" in ln)
    if has_ringbuf_overwrite():
        assert "uses an overwrite RINGBUF" in line
    else:
        assert "uses the perf overwrite ring" in line and "6.19" in line


def test_doctor_says_whether_markers_work() -> None:
    res = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120)
    line = next(ln for ln in res.stdout.splitlines() if "markers" in ln)
    if has_user_ringbuf() and not missing_tools():
        assert "`ringtool mark` works" in line
    else:
        assert "traces run without `ringtool mark`" in line
