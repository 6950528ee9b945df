"""`ringtool doctor` says which ring a flight recorder gets on this kernel."""

from __future__ import annotations

import subprocess

import pytest

from ringtool.kernel.ringbuf_map import has_ringbuf_overwrite
from tests.helpers.paths import RINGTOOL

pytestmark = pytest.mark.kernel


def test_doctor_names_the_flight_recorder_ring() -> None:
    res = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120)
    line = next(ln for ln in res.stdout.splitlines() if "ringbuf overwrite" in ln)
    if has_ringbuf_overwrite():
        assert "uses an overwrite RINGBUF" in line
    else:
        assert "uses the perf overwrite ring" in line and "6.19" in line
