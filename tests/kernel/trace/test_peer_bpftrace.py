"""Peer check: ``ringtool trace`` sees the open family and exec attempts exactly as
bpftrace does (the same tracepoints, read by an independent tracer).

The workload (tests/kernel/trace/peer/workload.c, compiled with gcc) makes every call of the
open family -- open, openat, openat2, creat, open_by_handle_at -- successful and
failed, and exec attempts with odd argv (empty strings, escape sequences, invalid
UTF-8, a tab, no argv at all, more than TRACE_MAXARG arguments), failed (ENOENT,
EACCES) and successful (in children, of /bin/true under the workload's name), some as
uid 65534; it writes its own ground truth. bpftrace (tests/kernel/trace/peer/open_exec.bt)
and ``ringtool trace --json --events exec,open -c NAME`` run at the same time; their
events must be equal event for event (a multiset: two tracers' per-CPU buffers order
differently): open: syscall, pid, uid, path, flags, mode, result; exec: syscall, pid,
uid, filename, argv, result. The workload's own record of its calls must be among
them (the exec'd /bin/true's loader opens files too: both tracers see those).

The workload's children touch every string they pass before the call: after fork, a
read-only data page is unmapped until touched, and no tracer's probe can fault it in
(bpftrace reads paths at entry and then shows "", ringtool's open reads them at exit,
after the kernel did). That is a property of reading user memory from BPF, not of
either tracer; the check compares what both can see.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringtool.event import exec_data
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel

PEER = Path(__file__).resolve().parent / "peer"
#: what creat(2) opens with (fs/open.c); bpftrace sees no flags argument
CREAT_FLAGS = os.O_CREAT | os.O_WRONLY | os.O_TRUNC

Event = tuple[object, ...]


def text(raw: bytes) -> str:
    """Bytes as ringtool's JSON gives them (non-UTF-8 bytes as \\xNN)."""
    return raw.decode("utf-8", "backslashreplace")


def open_event(call: str, pid: int, uid: int, path: str, flags: int, mode: int,
               ret: int) -> Event:  # fmt: skip
    return ("open", call, pid, uid, path, flags, mode, ret)


def exec_event(call: str, pid: int, uid: int, filename: str, argv: list[str],
               ret: int) -> Event:  # fmt: skip
    return ("exec", call, pid, uid, filename, tuple(argv), ret)


def parse_bpftrace(lines: list[bytes]) -> list[Event]:
    """The events of open_exec.bt's lines: entries paired with their exits per thread,
    in time order."""
    rows = []
    for line in lines:
        kind, rest = line[:1], line[2:]
        if kind in (b"E", b"V", b"A", b"X") and line[1:2] == b" ":
            ns, tail = rest.split(b" ", 1)
            rows.append((int(ns), kind, tail))
    rows.sort(key=lambda r: r[0])
    pending: dict[int, list[object]] = {}
    out: list[Event] = []
    for _ns, kind, tail in rows:
        if kind == b"E":
            tid, pid, uid, call, flags, mode, path = tail.split(b" ", 6)
            f = CREAT_FLAGS if call == b"creat" else int(flags)
            pending[int(tid)] = ["open", call.decode(), int(pid), int(uid), text(path), f,
                                 int(mode)]  # fmt: skip
        elif kind == b"V":
            tid, pid, uid, call, filename = tail.split(b" ", 4)
            pending[int(tid)] = ["exec", call.decode(), int(pid), int(uid), text(filename), []]
        elif kind == b"A":
            tid, _index, arg = tail.split(b" ", 2)
            pending[int(tid)][5].append(text(arg))  # type: ignore[attr-defined]
        else:
            tid, ret = tail.split(b" ")
            entry = pending.pop(int(tid), None)
            if entry is None:  # an exit whose entry came before bpftrace started
                continue
            if entry[0] == "open":
                out.append(open_event(*entry[1:], int(ret)))  # type: ignore[arg-type]
            else:
                out.append(exec_event(*entry[1:], int(ret)))  # type: ignore[arg-type]
    return out


def parse_ringtool(objs: list[dict[str, object]]) -> list[Event]:
    """ringtool's open and exec events; a truncated argv is marked with ``...`` at
    the end (bpftrace's is cut to match: :func:`cut_like`)."""
    out: list[Event] = []
    for o in objs:
        if o["type"] == "open":
            out.append(open_event(o["syscall"], o["pid"], o["uid"], o["path"], o["flags"],  # type: ignore[arg-type]
                                  o["mode"], o["ret"]))  # type: ignore[arg-type]  # fmt: skip
        elif o["type"] == "exec":
            argv = list(o["argv"]) + (["..."] if o["argv_truncated"] else [])  # type: ignore[call-overload]
            out.append(exec_event(o["syscall"], o["pid"], o["uid"], o["filename"], argv,  # type: ignore[arg-type]
                                  o["ret"]))  # type: ignore[arg-type]  # fmt: skip
    return out


def cut_like(ev: Event) -> Event:
    """An exec event with more than TRACE_MAXARG arguments as ringtool stores it: the
    first TRACE_MAXARG, then ``...``."""
    if ev[0] != "exec" or len(ev[5]) <= exec_data.MAXARG:  # type: ignore[arg-type]
        return ev
    argv = [*ev[5][: exec_data.MAXARG], "..."]  # type: ignore[index]
    return (*ev[:5], tuple(argv), ev[6])


def unhex(h: str) -> str:
    """A string of the workload's record (hex; ``-``: empty)."""
    return text(b"" if h == "-" else bytes.fromhex(h))


def parse_truth(path: Path) -> list[Event]:
    """The workload's record of its own calls."""
    out: list[Event] = []
    for line in path.read_text().splitlines():
        f = line.split(" ")
        if f[0] == "open":  # open pid uid call flags mode ret path
            out.append(open_event(f[3], int(f[1]), int(f[2]), unhex(f[7]), int(f[4]),
                                  int(f[5]), int(f[6])))  # fmt: skip
        else:  # exec pid uid call ret filename arg...
            out.append(exec_event(f[3], int(f[1]), int(f[2]), unhex(f[5]),
                                  [unhex(h) for h in f[6:]], int(f[4])))  # fmt: skip
    return out


def wait_ready(bt: subprocess.Popen[bytes], out: Path) -> None:
    """Until bpftrace printed READY (from BEGIN: its probes are attached)."""
    deadline = time.monotonic() + 120
    while b"READY" not in out.read_bytes():
        assert bt.poll() is None, f"bpftrace exited with {bt.returncode}"
        assert time.monotonic() < deadline, "bpftrace did not start"
        time.sleep(0.1)


@pytest.fixture
def workload(tmp_path: Path) -> Path:
    binary = tmp_path / "workload"
    subprocess.run(["gcc", "-O1", "-Wall", "-o", str(binary), str(PEER / "workload.c")],
                   check=True)  # fmt: skip
    return binary


def run_workload(workload: Path, truth: Path, name: str, home: Path) -> None:
    """Run the workload (comm ``name``) in ``home``: its ground truth into ``truth``."""
    prog = home / name  # /bin/true under the workload's name: an exec keeps the comm
    prog.symlink_to("/bin/true")
    work = home / "d"
    work.mkdir()
    proc = subprocess.Popen([str(workload), str(truth), name, str(work), str(prog)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    out, _ = proc.communicate(b"go\n", timeout=120)
    assert out == b"ready\n" and proc.returncode == 0


@pytest.fixture
def home() -> Iterator[Path]:
    """A directory uid 65534 can reach, removed afterwards."""
    path = Path("/tmp") / f"rtc-peer-{secrets.token_hex(4)}"
    path.mkdir(mode=0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def test_ringtool_sees_what_bpftrace_sees(tmp_path: Path, workload: Path, home: Path) -> None:
    bpftrace = shutil.which("bpftrace")
    assert bpftrace, "bpftrace is not installed: scripts/setup.sh installs it"
    name = "rtp" + secrets.token_hex(6)  # 15 bytes: the whole comm
    truth = tmp_path / "truth"
    bt_out = tmp_path / "bpftrace.out"  # bytes as they come (argv is not UTF-8)
    with open(bt_out, "wb") as sink:
        bt = subprocess.Popen([bpftrace, str(PEER / "open_exec.bt"), name], stdout=sink,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        ours = Trace("--json", "--events", "exec,open", "-c", name)
        wait_ready(bt, bt_out)
        run_workload(workload, truth, name, home)
        time.sleep(1.0)  # both tracers read what is left
        ours.signal(signal.SIGINT)
        out, _ = ours.finish()
    finally:
        bt.send_signal(signal.SIGINT)
        bt.wait(timeout=60)
    objs = [json.loads(line) for line in out if line.strip()]
    summary = objs[-1]
    assert summary["type"] == "summary" and summary["dropped"] == 0 and summary["lost"] == 0
    theirs = [cut_like(e) for e in parse_bpftrace(bt_out.read_bytes().splitlines())]
    mine = parse_ringtool(objs)
    only_ours, only_theirs = Counter(mine) - Counter(theirs), Counter(theirs) - Counter(mine)
    assert not only_ours and not only_theirs, (only_ours, only_theirs)
    expected = [cut_like(e) for e in parse_truth(truth)]
    assert not Counter(expected) - Counter(mine), Counter(expected) - Counter(mine)
    calls = {e[1] for e in expected}
    assert {"open", "openat", "openat2", "creat", "open_by_handle_at", "execve",
            "execveat"} <= calls  # fmt: skip
    assert any(e[0] == "exec" and e[6] == 0 for e in expected)  # successful execs
    assert sum(e[0] == "exec" and e[6] < 0 for e in expected) >= 4  # failed ones
    assert {e[3] for e in expected} == {0, 65534}


def test_failed_only_shows_every_failed_exec_and_nothing_else(
    tmp_path: Path, workload: Path, home: Path
) -> None:
    """``--events exec -x`` (execsnoop's -x): exactly the workload's failed exec
    attempts (ENOENT, EACCES; as root and as uid 65534), no successful exec, fork or
    exit."""
    name = "rtx" + secrets.token_hex(6)
    truth = tmp_path / "truth"
    ours = Trace("--json", "--events", "exec", "-x", "-c", name)
    run_workload(workload, truth, name, home)
    time.sleep(0.5)
    ours.signal(signal.SIGINT)
    out, _ = ours.finish()
    objs = [json.loads(line) for line in out if line.strip()]
    assert objs[-1]["type"] == "summary" and objs[-1]["dropped"] == 0
    events = [o for o in objs if o["type"] not in ("start", "stats", "summary", "note")]
    assert {o["type"] for o in events} == {"exec"}
    failed = [cut_like(e) for e in parse_truth(truth) if e[0] == "exec" and e[6] < 0]  # type: ignore[operator]
    assert len(failed) == 5
    assert Counter(parse_ringtool(events)) == Counter(failed)
