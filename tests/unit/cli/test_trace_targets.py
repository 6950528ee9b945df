"""``-p``/``-t`` that match no live task are noted once (the trace goes on); the real
/proc of this machine."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ringtool.cli.trace_targets import require_interface, target_notes
from ringtool.errors import UsageError


def _free_pid() -> int:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(pid_max - 1, 1, -1) if not Path(f"/proc/{p}").exists())


def test_live_targets_need_no_note() -> None:
    assert target_notes(os.getpid(), os.getpid()) == []
    assert target_notes(None, None) == []


def test_a_pid_or_tid_that_is_not_running_is_noted_once() -> None:
    free = _free_pid()
    assert target_notes(free, None) == [
        f"-p {free}: no such process now; tracing in case it appears"
    ]
    assert target_notes(None, free) == [
        f"-t {free}: no such thread now; tracing in case it appears"
    ]


def test_a_thread_given_as_pid_is_named() -> None:
    ready, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def run() -> None:
        tid.append(threading.get_native_id())
        ready.set()
        done.wait(30)

    t = threading.Thread(target=run)
    t.start()
    try:
        ready.wait(30)
        (note,) = target_notes(tid[0], tid[0])  # as -t: fine; as -p: not a process
        assert note.startswith(f"-p {tid[0]}: a thread of process {os.getpid()}")
    finally:
        done.set()
        t.join()


def test_interfaces() -> None:
    require_interface("lo")
    with pytest.raises(UsageError, match="-i rt-no-such-if: no such network interface"):
        require_interface("rt-no-such-if")
