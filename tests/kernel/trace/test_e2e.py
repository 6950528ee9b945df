"""``ringtool trace`` end to end: the real CLI, real BPF sources, a known workload."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.trace import Trace, told_json

pytestmark = pytest.mark.kernel


def run_cat(tmp_path: Path) -> tuple[int, Path]:
    """Write a file and exec /bin/cat on it; returns cat's pid and the path."""
    path = tmp_path / "known.txt"
    path.write_text("hello\n")
    cat = subprocess.Popen(["/bin/cat", str(path)], stdout=subprocess.DEVNULL)
    cat.wait()
    return cat.pid, path


def json_lines(lines: list[str]) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in lines if line.strip()]


def test_json_finds_exec_and_open_of_a_known_command(tmp_path: Path) -> None:
    proc = Trace("--json", "-d", "4")
    ran_at = time.time()  # (a busy machine's events may take the trace long to write)
    pid, path = run_cat(tmp_path)
    out, err = proc.finish()
    objs = json_lines(out)
    # stdout: events, then the summary; nothing else
    assert [o["type"] for o in objs].count("summary") == 1 and objs[-1]["type"] == "summary"
    events = objs[:-1]
    assert not {o["type"] for o in events} & {"start", "stats", "note"}
    mine = [e for e in events if e["pid"] == pid]
    execs = [e for e in mine if e["type"] == "exec"]
    assert execs and execs[0]["filename"] == "/bin/cat" and execs[0]["comm"] == "cat"
    assert execs[0]["ppid"] == os.getpid()
    opens = [e for e in mine if e["type"] == "open" and e["path"] == str(path)]
    assert len(opens) == 1 and opens[0]["ret"] >= 0 and opens[0]["comm"] == "cat"
    assert any(e["type"] == "exit" and e["exit_code"] == 0 for e in mine)
    for e in events:
        assert {"type", "ts", "cpu", "pid", "comm"} <= e.keys()
    assert abs(opens[0]["ts"] - ran_at) < 30  # wall-clock seconds, not since boot
    summary = objs[-1]
    assert summary["type"] == "summary"
    assert summary["events"] == len(events)
    by_type: dict[str, int] = {}
    for e in events:
        by_type[e["type"]] = by_type.get(e["type"], 0) + 1
    assert summary["by_type"] == by_type
    assert summary["dropped"] == sum(summary["dropped_per_cpu"])
    told = told_json(err)  # stderr: the start line; stats lines only with --stats
    assert told[0]["type"] == "start"
    assert [o for o in told if o["type"] == "stats" and not o["dropped_interval"]] == []


def test_no_tui_columns_into_a_pipe(tmp_path: Path) -> None:
    proc = Trace("--no-tui", "--stats", "-d", "3", "--events", "exec,open")
    pid, path = run_cat(tmp_path)
    lines, err = proc.finish()
    # stdout: the header, then events only (`> events.txt` and `| head` get events)
    assert lines[0].split() == ["TS", "CPU", "PID", "UID", "COMM", "TYPE", "DETAIL"]
    assert all(re.match(r"\d\d:\d\d:\d\d\.\d{3} +\d+ +\d+ ", line) for line in lines[1:]), lines
    mine = [line.split() for line in lines if f" {pid} " in line]
    uid = str(os.getuid())
    assert any(f[3:7] == [uid, "cat", "exec", "/bin/cat"] for f in mine)
    # into a pipe lines are whole (cutting to 80 is for terminals: test_trace_columns)
    assert any(f[5] == "open" and f[6] == str(path) and f[7].startswith("O_RDONLY") for f in mine)
    # stderr: what is said about the trace, and (--stats) a stats line per interval
    told = err.splitlines()
    assert told[:2] == ["sources: exec, open", "Tracing... Ctrl-C to end."]
    assert any(line.startswith("--") and "ev/s" in line for line in told)
    assert any("events in" in line and "dropped" in line for line in told)


def test_filters_sigint_and_disabled_source(tmp_path: Path) -> None:
    proc = Trace("--json", "-c", "cat", "--events", "exec,open,net")
    _pid, path = run_cat(tmp_path)
    time.sleep(1.0)
    proc.signal(signal.SIGINT)
    out, err = proc.finish()
    objs = json_lines(out)
    assert "source net disabled" in told_json(err)[0]["notes"][0]
    events = [o for o in objs if o["type"] in ("exec", "open", "exit", "fork")]
    assert events and all(e["comm"] == "cat" for e in events)
    assert any(e["type"] == "open" and e["path"] == str(path) for e in events)
    assert objs[-1]["type"] == "summary" and objs[-1]["events"] == len(events)


def test_pid_filter(tmp_path: Path) -> None:
    proc = Trace("--json", "-d", "2", "-p", str(os.getpid()), "--events", "open")
    (tmp_path / "mine").write_text("x")
    (tmp_path / "mine").read_text()
    subprocess.run(["/bin/cat", "/etc/hostname"], stdout=subprocess.DEVNULL, check=True)
    out, _ = proc.finish()
    events = [o for o in json_lines(out) if o["type"] == "open"]
    assert events and all(e["pid"] == os.getpid() for e in events)
    assert any(e["path"] == str(tmp_path / "mine") for e in events)


def _open_loop(path: Path, n: int) -> subprocess.Popen[bytes]:
    code = f"p={str(path)!r}\nfor _ in range({n}):\n    open(p).close()\n"
    return subprocess.Popen([sys.executable, "-c", code])


def test_tiny_buffer_under_load_counts_drops(tmp_path: Path) -> None:
    target = tmp_path / "hot"
    target.write_text("x")
    proc = Trace("--json", "--events", "open", "--buffer-pages", "1", "--interval", "0.5")
    proc.signal(signal.SIGSTOP)  # the consumer stalls: the 4 KiB rings overflow
    try:
        _open_loop(target, 3000).wait(timeout=60)
    finally:
        proc.signal(signal.SIGCONT)
    time.sleep(1.0)
    proc.signal(signal.SIGINT)
    out, err = proc.finish()
    objs = json_lines(out)
    summary = objs[-1]
    hot = [o for o in objs if o["type"] == "open" and o["path"] == str(target)]
    events = [o for o in objs if o["type"] == "open"]
    assert summary["events"] == len(events)
    assert summary["dropped"] > 0 and summary["dropped_by_source"]["open"] == summary["dropped"]
    assert summary["dropped_by_source_per_cpu"]["open"] == summary["dropped_per_cpu"]
    assert len(hot) < 3000 <= len(hot) + summary["dropped"]
    assert any(o["type"] == "stats" and o["dropped"] > 0 for o in told_json(err))


def test_no_unaccounted_loss_with_a_large_buffer(tmp_path: Path) -> None:
    target = tmp_path / "hot"
    target.write_text("x")
    proc = Trace("--json", "--events", "open", "--buffer-pages", "1024")
    _open_loop(target, 20000).wait(timeout=60)
    time.sleep(1.0)
    proc.signal(signal.SIGINT)
    out, _ = proc.finish()
    objs = json_lines(out)
    hot = [o for o in objs if o["type"] == "open" and o["path"] == str(target)]
    assert objs[-1]["dropped"] == 0
    assert len(hot) == 20000


def test_ordered_output_is_sorted_by_timestamp(tmp_path: Path) -> None:
    proc = Trace("--json", "--stats", "-d", "3", "--events", "exec,open", "--ordered",
                 "--window-us", "2000")  # fmt: skip
    for _ in range(3):
        run_cat(tmp_path)
    out, err = proc.finish()
    objs = json_lines(out)
    ts = [o["ts"] for o in objs if o["type"] in ("exec", "open", "exit", "fork")]
    assert len(ts) > 10
    assert ts == sorted(ts)
    assert objs[-1]["events"] == len(ts)
    assert objs[-1]["ordering"]["out_of_order"] == 0
    assert any("ordering" in o for o in told_json(err) if o["type"] == "stats")


def test_ordered_without_window_counts_exactly_the_inversions(tmp_path: Path) -> None:
    proc = Trace("--json", "-d", "3", "--events", "exec,open", "--ordered")
    for _ in range(5):
        run_cat(tmp_path)
    out, _ = proc.finish()
    objs = json_lines(out)
    ts = [o["ts"] for o in objs if o["type"] in ("exec", "open", "exit", "fork")]
    inversions = sum(1 for a, b in itertools.pairwise(ts) if b < a)
    ordering = objs[-1]["ordering"]
    assert ordering["out_of_order"] == inversions
    assert sum(ordering["out_of_order_per_buffer"]) == inversions


@pytest.mark.parametrize("mode", ["--json", "--no-tui"])
def test_pipe_into_head_gets_events_and_exits_quietly(tmp_path: Path, mode: str) -> None:
    cmd = f"{sys.executable} -m ringtool.cli.main trace {mode} --events open | head -n 3"
    sh = subprocess.Popen(["sh", "-c", cmd], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while sh.poll() is None and time.monotonic() < deadline:
        (tmp_path / "poke").write_text("x")  # keep events coming
        time.sleep(0.2)
    out, err = sh.communicate(timeout=10)
    lines = out.splitlines()
    assert len(lines) == 3
    if mode == "--json":  # events only: no start, note or stats line among them
        assert [json.loads(line)["type"] for line in lines] == ["open"] * 3
    else:  # the header, then events
        assert lines[0].split()[:6] == ["TS", "CPU", "PID", "UID", "COMM", "TYPE"]
        assert [line.split()[5] for line in lines[1:]] == ["open"] * 2
    assert "Tracing..." in err or '"type": "start"' in err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_non_root_gets_one_clear_line() -> None:
    res = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
         *RINGTOOL, "trace", "-d", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert lines == ["ringtool trace needs root or CAP_BPF+CAP_PERFMON: run with sudo"]
    assert res.stdout == ""
