"""The syscalls source's per-tid slots (bpf/trace_syscalls.c, ``started_tid``): one for
every tid the kernel can give (its ``pid_max``), at most ``MAX_TID_SLOTS`` (the
threads beyond keep theirs in task storage), and given to every RINGBUF source's
compile."""

from __future__ import annotations

from pathlib import Path

from ringtool.trace.reading.cflags import MAX_TID_SLOTS, ring_defines, tid_slots
from ringtool.trace.reading.options import TraceOptions


def test_slots_follow_pid_max_up_to_the_bound(tmp_path: Path) -> None:
    pid_max = tmp_path / "pid_max"
    pid_max.write_text("32768\n")
    assert tid_slots(pid_max) == 32768
    pid_max.write_text("4194304\n")  # systemd's default on 64-bit machines
    assert tid_slots(pid_max) == MAX_TID_SLOTS
    pid_max.write_text("not a number\n")
    assert tid_slots(pid_max) == MAX_TID_SLOTS
    assert tid_slots(tmp_path / "absent") == MAX_TID_SLOTS


def test_the_sources_are_compiled_with_them() -> None:
    assert ring_defines(TraceOptions(), [])["TRACE_TID_SLOTS"] == tid_slots()
