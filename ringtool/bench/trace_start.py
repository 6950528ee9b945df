"""``ringtool bench trace``'s start-up beside its peers': seconds from the command to
its start line, and to its first event (and the CPU it had used by its start line:
``start_cpu_s``, which moves less with the machine's load than the wall time), for
``ringtool trace --json`` (the default sources, the program cache warm), Debian's
libbpf-tools ``opensnoop`` (to its header line) and ``bpftrace`` (opensnoop.bt's
probes on ``openat``, to the output of its
``BEGIN`` probe). Each is timed alike: started pinned to one CPU with its stdout and
stderr on a pseudo-terminal (line-buffered, as on a terminal: a C tool's ``printf``
to a pipe would sit in its buffer), from just before the fork to the line read by the
bench. In rounds, one start of each per round, after a first round not counted (it
fills the program cache and the page cache); the median, lowest and highest.
``ringtool_ratio``: ringtool's median over the tracer's (above 1: ringtool starts
slower). A tracer not installed is a row with ``skipped`` (and the command that
installs it). ringtool's row has ``stale_bytecode``: how many of ringtool's modules
have no current bytecode (``__pycache__``), each compiled again at every start where
Python may not write it (``PYTHONDONTWRITEBYTECODE``, a read-only tree): ~0.1 s of a
start when most are (``make setup`` writes them, as ``python -m compileall ringtool``
does; so does a wheel's install).
"""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ringtool
from ringtool.bench.peer_tracers import BPFTRACE_PROGRAM, LIBBPF_OPENSNOOP, Tracer
from ringtool.errors import BenchError

#: What bpftrace's BEGIN probe prints (bpftrace runs it once every probe is attached).
BPFTRACE_START = "rt-bench-start"
#: How long one start may take before the bench gives up on it.
START_TIMEOUT_S = 120.0
#: How long a tracer may take to end after SIGINT before it is killed.
END_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Starter:
    """A tracer, and how its start line and its event lines look."""

    tracer: Tracer
    is_start: Callable[[bytes], bool]
    is_event: Callable[[bytes], bool]


def _ringtool_event(line: bytes) -> bool:
    return line.startswith(b'{"type": "') and not line.startswith(
        (b'{"type": "start"', b'{"type": "note"', b'{"type": "stats"')
    )


def starters() -> tuple[Starter, ...]:
    """ringtool first (the ratios' reference), then its peers."""
    rt = Tracer("ringtool", (sys.executable, "-m", "ringtool", "trace", "--json"))
    snoop = Tracer("opensnoop (libbpf-tools)", (str(LIBBPF_OPENSNOOP),),
                   needs=str(LIBBPF_OPENSNOOP), package="libbpf-tools")  # fmt: skip
    program = f'BEGIN {{ printf("{BPFTRACE_START}\\n"); }} {BPFTRACE_PROGRAM}'
    bt = Tracer("bpftrace", ("bpftrace", "-e", program), needs="bpftrace", package="bpftrace")
    return (
        Starter(rt, lambda ln: ln.startswith(b'{"type": "start"'), _ringtool_event),
        Starter(snoop, lambda ln: ln.startswith(b"PID "), lambda ln: ln[:1].isdigit()),
        Starter(bt, lambda ln: ln == BPFTRACE_START.encode(), lambda ln: ln[:1].isdigit()),
    )


def _lines(master: int, deadline: float) -> Iterator[bytes]:
    """The lines the pseudo-terminal's ``master`` gives (without ``\\r\\n``), until
    ``deadline`` or the end."""
    buf = b""
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([master], [], [], left)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal's other side is gone
            break
        if not data:
            break
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r")


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(END_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, its threads that ended and
    its children it waited for included (``/proc/PID/stat`` fields 14-17: clock ticks)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rfind(b")") + 2 :].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Start:
    """One start: seconds to the start line and to the first event, and the CPU
    seconds the tracer had used when its start line came (:func:`cpu_seconds`)."""

    start_s: float
    first_event_s: float
    cpu_s: float


def time_start(starter: Starter, cpu: int) -> Start:
    """One start of ``starter`` pinned to ``cpu`` (see :class:`Start`).
    :class:`BenchError` (with its last lines) when the start line or the first event
    does not come within :data:`START_TIMEOUT_S`."""
    master, slave = os.openpty()
    seen: list[bytes] = []
    try:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            starter.tracer.argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
        )  # fmt: skip
        os.close(slave)
        slave = -1
        try:
            start = first = None
            cpu_s = 0.0
            for line in _lines(master, t0 + START_TIMEOUT_S):
                now = time.monotonic() - t0
                seen = [*seen[-4:], line]
                if start is None and starter.is_start(line):
                    start = now
                    cpu_s = cpu_seconds(proc.pid)
                elif start is not None and starter.is_event(line):
                    first = now
                    break
        finally:
            _end(proc)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    if start is None or first is None:
        tail = " | ".join(ln.decode("utf-8", "backslashreplace") for ln in seen)
        raise BenchError(f"{starter.tracer.name} gave no start line and event: {tail[-500:]}")
    return Start(start, first, cpu_s)


def stale_bytecode(package: Path | None = None) -> int:
    """How many modules of ``package`` (ringtool's directory when None) have no bytecode
    file at least as new as their source."""
    stale = 0
    for source in (package or Path(ringtool.__file__).parent).rglob("*.py"):
        cached = Path(importlib.util.cache_from_source(str(source)))
        try:
            if cached.stat().st_mtime < source.stat().st_mtime:
                stale += 1
        except FileNotFoundError:
            stale += 1
    return stale


def _row(name: str, runs: list[Start]) -> dict[str, Any]:
    starts = [r.start_s for r in runs]
    return {"bench": "trace-startup", "tracer": name,
            "start_s": round(statistics.median(starts), 3),
            "start_min_s": round(min(starts), 3), "start_max_s": round(max(starts), 3),
            "first_event_s": round(statistics.median(r.first_event_s for r in runs), 3),
            "start_cpu_s": round(statistics.median(r.cpu_s for r in runs), 3),
            "runs": len(starts)}  # fmt: skip


def peer_starts(cpu: int, rounds: int) -> list[dict[str, Any]]:
    """The rows of the module doc: ``rounds`` counted rounds on ``cpu``."""
    runnable = [s for s in starters() if s.tracer.missing() is None]
    times: dict[str, list[Start]] = {s.tracer.name: [] for s in runnable}
    for i in range(rounds + 1):
        for s in runnable:
            t = time_start(s, cpu)
            if i:  # the first round warms the caches
                times[s.tracer.name].append(t)
    rows = []
    reference = None
    for s in starters():
        why = s.tracer.missing()
        if why is not None:
            rows.append({"bench": "trace-startup", "tracer": s.tracer.name, "skipped": why})
            continue
        row = _row(s.tracer.name, times[s.tracer.name])
        if reference is None:
            reference = row["start_s"]
            row.update(sources="default", cache="warm", stale_bytecode=stale_bytecode())
        else:
            row["ringtool_ratio"] = round(reference / row["start_s"], 1) if row["start_s"] else None
        rows.append(row)
    return rows


__all__ = ["BPFTRACE_START", "Start", "Starter", "cpu_seconds", "peer_starts",
           "stale_bytecode", "starters", "time_start"]  # fmt: skip
