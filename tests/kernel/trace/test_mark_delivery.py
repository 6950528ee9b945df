"""``ringtool mark`` exits 0 only with its marker in the trace: a ``mark`` killed
between the user ring's reserve and submit (tests/helpers/killed_marker.py) does not
stop the markers after it, and a marker that cannot be delivered is a non-zero exit
with one line."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys

import pytest

from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.readers.user_ringbuf import UserRingBuffer
from ringtool.trace.reading.mark_send import MarkNotDeliveredError, _deliver, encode
from tests.helpers.paths import ROOT
from tests.helpers.procs import run_ringtool
from tests.helpers.trace import Trace, marker_dir

pytestmark = pytest.mark.kernel


def marks(lines: list[str]) -> list[str]:
    """The texts of the trace's mark events (other tests' traces may mark it too: their
    texts hold other tags)."""
    events = [json.loads(line) for line in lines]
    return [e["text"] for e in events if e["type"] == "mark"]


def kill_a_marker(where: str, how: str) -> int:
    """Run the half-way marker on the trace at ``where``; its pid (it was SIGKILLed)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.helpers.killed_marker", where, how],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr
    return int(done.stdout)


def test_marks_after_one_killed_before_submit_reach_the_trace() -> None:
    tag = secrets.token_hex(6)
    t = Trace("--json", "--events", "exec")
    try:
        where = marker_dir(t)
        dead = kill_a_marker(where, "busy")
        first = run_ringtool("mark", f"first {tag}")
        assert first.returncode == 0, first.stderr
        second = run_ringtool("mark", f"second {tag}")
        assert second.returncode == 0, second.stderr
        assert "half-written" not in second.stderr
    finally:
        t.signal(signal.SIGINT)
    lines, _ = t.finish()
    got = [m for m in marks(lines) if tag in m or m.startswith("half")]
    assert got == [f"first {tag}", f"second {tag}"]  # and not the half-written one
    note = f"discarded a marker left half-written by pid {dead}"
    assert first.stderr == f"ringtool mark: note: trace {where}: {note}\n"


def test_a_mark_the_trace_cannot_take_exits_non_zero_with_one_line() -> None:
    tag = secrets.token_hex(6)
    t = Trace("--json", "--events", "exec")
    try:
        where = marker_dir(t)
        kill_a_marker(where, "corrupt")
        for n in range(2):  # this mark, and every later one
            done = run_ringtool("mark", f"lost {n} {tag}")
            assert done.returncode == 1, done.stderr
            (line,) = done.stderr.splitlines()
            assert line.startswith(
                f"ringtool mark: trace {where}: its drain refused the marker ring (Invalid "
                "argument): the ring is corrupt; restart the trace to take markers again"
            ), line
    finally:
        t.signal(signal.SIGINT)
    lines, _ = t.finish()
    assert not [m for m in marks(lines) if tag in m]


def test_a_mark_into_a_trace_with_a_name_filter_is_shown() -> None:
    """-n is a user-space filter after the ring; the marker's comm is the marking
    process's, and filters never apply to markers."""
    tag = secrets.token_hex(6)
    t = Trace("--json", "--events", "exec", "-n", f"^no-such-comm-{tag}$")
    try:
        done = run_ringtool("mark", f"filtered {tag}")
        assert done.returncode == 0, done.stderr
    finally:
        t.signal(signal.SIGINT)
    lines, _ = t.finish()
    assert [m for m in marks(lines) if tag in m] == [f"filtered {tag}"]


def test_a_mark_delivered_as_the_trace_ends_is_not_confirmed() -> None:
    """The race of a ``mark`` with the trace's last read, widened: the trace's marker
    ring and drain are taken as ``mark`` takes them (without its lock) before the trace
    ends, and the marker is delivered after it read its rings a last time and exited:
    the drain refuses, so it is not confirmed."""
    tag = secrets.token_hex(6)
    t = Trace("--json", "--events", "exec")
    where = marker_dir(t)
    marks_fd = bpf.obj_get(os.path.join(where, "marks"))
    drain_fd = bpf.obj_get(os.path.join(where, "drain"))
    try:
        t.signal(signal.SIGINT)
        t.finish()
        sample = encode(f"late {tag}", load_layout().constants["TRACE_DATA_LEN"])
        with UserRingBuffer(marks_fd) as urb:
            with pytest.raises(MarkNotDeliveredError) as err:
                _deliver(urb, drain_fd, sample, where)
            assert urb.consumer_pos() == 0  # not drained
    finally:
        bpf.close_fd(marks_fd)
        bpf.close_fd(drain_fd)
    assert str(err.value) == f"trace {where}: the trace ended before the marker was read"
