"""``ringtool mark TEXT`` into a running ``ringtool trace``: the marker goes through a
USER_RINGBUF and bpf/trace_mark.bpf.c into the trace's rings, stamped by the kernel."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ringtool.trace.reading.mark_send import NoTraceError, send_mark
from ringtool.trace.reading.marks import PIN_ROOT, entry_name, namespace_key, remove_stale
from tests.helpers.bpffs import scratch_pin_root
from tests.helpers.namespaces import PID_NS, live_pid_namespace, python_in
from tests.helpers.procs import run_ringtool
from tests.helpers.tmux import RUN, Terminal, needs_tmux
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel


def test_a_mark_appears_in_the_json_in_timestamp_order() -> None:
    tag = secrets.token_hex(6)
    before, after = f"/nonexistent-{tag}-before", f"/nonexistent-{tag}-after"
    t = Trace("--json", "--events", "open", "--ordered")
    try:
        for _ in range(3):
            with pytest.raises(FileNotFoundError):
                os.open(before, os.O_RDONLY)
        done = run_ringtool("mark", f"hello {tag}")
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        for _ in range(3):
            with pytest.raises(FileNotFoundError):
                os.open(after, os.O_RDONLY)
    finally:
        t.signal(signal.SIGINT)
    lines, _ = t.finish()
    events = [json.loads(line) for line in lines if tag in line]
    kinds = [e.get("path", e.get("text")) for e in events]
    assert kinds == [before] * 3 + [f"hello {tag}"] + [after] * 3, kinds
    mark = events[3]
    assert mark["type"] == "mark"
    assert mark["pid"] not in (os.getpid(), t.proc.pid)  # the marking process's task
    ts = [e["ts"] for e in events]
    assert ts == sorted(ts)


def test_the_trace_removes_its_pins_at_exit() -> None:
    t = Trace("--json", "--events", "exec")
    mine = f"{t.proc.pid}-"
    try:
        assert any(n.startswith(mine) for n in os.listdir(PIN_ROOT))
    finally:
        t.signal(signal.SIGINT)
    t.finish()
    assert not any(n.startswith(mine) for n in os.listdir(PIN_ROOT))


@pytest.fixture
def bpffs_root() -> Iterator[str]:
    with scratch_pin_root() as root:
        yield str(root)


def test_no_trace_running_is_one_clear_error(bpffs_root: str) -> None:
    with pytest.raises(NoTraceError, match="no ringtool trace is running"):
        send_mark("nobody listens", root=bpffs_root)


#: Run in a new PID namespace: its init's process key and the namespace key.
_KEYS = (
    "from ringtool.kernel.proc_start import namespace_key, process_key\n"
    "print(process_key(1), namespace_key())"
)


def test_stale_directories_of_dead_traces_are_removed(bpffs_root: str) -> None:
    ns = namespace_key()
    live = entry_name(os.getpid(), ns, "cafe")
    with live_pid_namespace() as running:
        # of a container gone with its PID namespace: nothing there can be its trace
        # (made after the running one: the kernel gives a freed namespace's inode
        # number to the next namespace made, proc_alloc_inum's lowest free id)
        key, gone_ns = python_in(PID_NS, _KEYS).split()
        assert gone_ns != running
        stale = [f"999999999-1-{ns}-ab",  # a pid that cannot exist
                 f"{os.getpid()}-1-{ns}-ab",  # our pid, another start time: reused
                 f"{key}-{gone_ns}-ab"]  # fmt: skip
        # of a PID namespace a process still runs in (a container sharing the
        # bpffs): whether it is its trace is unknown here, kept
        foreign = f"1-1-{running}-ab"
        for name in (*stale, live, foreign):  # live: our process (no pins: not marked)
            os.mkdir(f"{bpffs_root}/{name}")
        assert sorted(remove_stale(bpffs_root)) == sorted(stale)
    assert sorted(os.listdir(bpffs_root)) == sorted([live, foreign])
    with pytest.raises(NoTraceError):
        send_mark("x", root=bpffs_root)


def test_the_cli_refuses_a_text_too_long_in_one_line() -> None:
    done = run_ringtool("mark", "x" * 300)
    assert done.returncode == 2
    assert done.stderr.strip() == "ringtool mark: mark text is 300 bytes: at most 255"


def test_every_running_trace_gets_the_mark() -> None:
    tag = secrets.token_hex(6)
    traces = [Trace("--json", "--events", "exec") for _ in range(2)]
    try:
        done = run_ringtool("mark", f"both {tag}")
        assert done.returncode == 0, done.stderr
    finally:
        for t in traces:
            t.signal(signal.SIGINT)
    for t in traces:
        lines, _ = t.finish()
        events = [json.loads(line) for line in lines if f"both {tag}" in line]
        assert [e["text"] for e in events if e["type"] == "mark"] == [f"both {tag}"]


def test_kmes_read_shows_the_mark(tmp_path: Path) -> None:
    tag = secrets.token_hex(6)
    sock = tmp_path / "kmes.sock"
    t = Trace("--json", "-d", "120", "--events", "exec", "--kmes", str(sock))
    try:
        deadline = time.monotonic() + 90
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert run_ringtool("mark", f"kmes {tag}").returncode == 0
        marks: list[dict[str, Any]] = []
        while not marks and time.monotonic() < deadline:
            res = run_ringtool("kmes-read", "--socket", str(sock), "--json")
            assert res.returncode == 0, res.stderr
            events = [json.loads(line) for line in res.stdout.splitlines()]
            marks = [e for e in events if e["name"] == "mark"]
        assert [m["data"]["text"] for m in marks] == [f"kmes {tag}"]
    finally:
        t.signal(signal.SIGINT)
    t.finish()


@needs_tmux
def test_the_dashboard_shows_the_mark() -> None:
    """A trace of one idle process (-p): the filters do not apply to markers, so the
    recent-events panel shows the mark and nothing scrolls it away."""
    tag = secrets.token_hex(6)
    idle = subprocess.Popen(["sleep", "300"])
    term = Terminal(f"{RUN} trace --events exec -p {idle.pid}; sleep 60", 100, 30)
    try:
        term.wait_for("per CPU", "q quit")  # drawn after the marker ring is pinned
        assert run_ringtool("mark", f"tui {tag} \x1b[2J").returncode == 0
        screen = term.wait_for(f"tui {tag}")
        row = next(line for line in screen.splitlines() if tag in line)
        assert "mark" in row and "\\x1b[2J" in row
        term.send("q")
    finally:
        term.close()
        idle.kill()
        idle.wait()
