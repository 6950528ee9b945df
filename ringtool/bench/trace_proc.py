"""The processes of ``ringtool bench trace``: the C producer and the traced child.

* :func:`build_loop` compiles ``csrc/syscall_loop.c`` (committed next to this file)
  with the system compiler into a temporary directory, as ``rt_bench_XXXXXX`` (six random
  hex digits) — the process name (comm) the trace filters on;
* :class:`Loop` runs it pinned to one CPU for a time and parses its result line;
* :class:`TraceChild` runs ``ringtool trace`` through
  :mod:`ringtool.bench.trace_child` pinned to another CPU, waits until its sources are
  attached, and at the end gives its summary record and its resource usage
  (``os.wait4``: user + system CPU of that process alone).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ringtool.bench.cbuild import CSRC, build_c
from ringtool.errors import BenchError

SOURCE = CSRC / "syscall_loop.c"
#: The start of the producer's file name; a run's own producer is
#: ``rt_bench_<6 hex digits>`` (its comm, what that run's ``trace -c`` matches), so
#: benches running side by side on one machine do not feed each other's tracer.
COMM = "rt_bench_"
#: How long a traced child may take to load its sources.
READY_TIMEOUT_S = 120.0


def build_loop(directory: Path) -> Path:
    """``cc -O2`` of :data:`SOURCE` into ``directory``, named :data:`COMM` and six
    random hex digits (15 characters: the whole name is the comm); the binary's
    ``name`` is what ``trace -c`` must match. :class:`~ringtool.errors.BenchError`
    when that fails."""
    return build_c(SOURCE.name, directory / f"{COMM}{secrets.token_hex(3)}")


@dataclass(frozen=True)
class LoopResult:
    """One producer run: loop iterations (one ``openat`` + one ``close`` each), the
    wall time they took, the loop thread's own CPU time (what its syscalls cost,
    traced programs included, without time other processes took), and the fork+execs
    of the ``openexec`` mode."""

    iterations: int
    elapsed_ns: int
    cpu_ns: int
    execs: int

    @property
    def seconds(self) -> float:
        return self.elapsed_ns / 1e9

    @property
    def ns_per_syscall(self) -> float:
        """CPU ns per syscall (two per iteration; loop overhead included)."""
        return self.cpu_ns / (2 * self.iterations)


class Loop:
    """The producer started now: ``mode`` ``open`` or ``openexec`` on ``cpu``, at full
    speed or (``rate``) paced to that many iterations a second."""

    def __init__(self, binary: Path, mode: str, cpu: int, seconds: float,
                 rate: float = 0.0) -> None:  # fmt: skip
        self.name = binary.name
        paced = [f"{rate:.3f}"] if rate else []
        self.proc = subprocess.Popen([str(binary), mode, str(cpu), f"{seconds:.3f}", *paced],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)  # fmt: skip

    def result(self) -> LoopResult:
        """Waits for the end; :class:`BenchError` when the loop failed."""
        out, err = self.proc.communicate()
        if self.proc.returncode != 0:
            raise BenchError(f"{self.name}: {err.strip() or 'exit ' + str(self.proc.returncode)}")
        n, ns, cpu, execs = (int(x) for x in out.split())
        return LoopResult(n, ns, cpu, execs)


def run_loop(binary: Path, mode: str, cpu: int, seconds: float, rate: float = 0.0) -> LoopResult:
    return Loop(binary, mode, cpu, seconds, rate).result()


def task_cpu_ns(pid: int) -> int:
    """On-CPU nanoseconds of every thread of ``pid`` so far (``/proc/PID/task/*/
    schedstat``, first field: the scheduler's exact sum, not clock ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total


@dataclass(frozen=True)
class ChildResult:
    """What a traced child reported: its summary record, its CPU (user + system, s)
    in all from ``wait4`` and from ready to the end of its run (``getrusage`` in the
    child: without loading), its exit status."""

    summary: dict[str, Any]
    cpu_s: float
    run_cpu_s: float
    status: int


class TraceChild:
    """``ringtool trace ARGS`` pinned to ``cpu`` (see the module doc), stdout to
    ``stdout`` (a file, a pipe, or None for ``/dev/null``); ``terminal``: a pseudo-
    terminal's fd for stdin and stdout instead (``TERM=xterm-256color``: the
    dashboard, drawing as in a terminal)."""

    def __init__(self, args: list[str], cpu: int, *, headless_tui: bool = False,
                 stdout: IO[Any] | int | None = None, bpf_stats: bool = False,
                 terminal: int | None = None) -> None:  # fmt: skip
        r, w = os.pipe()
        # the default (statistics off) unless `bpf_stats` (--cost): with the kernel's BPF
        # run-time statistics on, every BPF program run pays two clock reads, which would
        # be counted as the programs' in-kernel cost (the overhead phase measures both)
        cost = ["--cost"] if bpf_stats else []
        cmd = [sys.executable, "-m", "ringtool.bench.trace_child", str(w),
               *(["--headless-tui"] if headless_tui else []), "--", *args, *cost]  # fmt: skip
        self.started = time.monotonic()
        # stderr into a file: the trace writes its stats lines there every interval, and
        # a pipe nobody reads until the end would stall it
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - lives with the child
        env = None
        if terminal is not None:  # its size from the terminal, not COLUMNS/LINES
            env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
            env["TERM"] = "xterm-256color"
            stdout = terminal
        try:
            self.proc = subprocess.Popen(
                cmd, pass_fds=[w], stdout=subprocess.DEVNULL if stdout is None else stdout,
                stdin=terminal, stderr=self._err, env=env,
                preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
            )  # fmt: skip
        finally:
            os.close(w)
        self.report = os.fdopen(r, "r")
        self.ready_at: float | None = None
        self.ready_cpu_s = 0.0

    def wait_ready(self) -> float:
        """Blocks until the sources are attached; the seconds that took since start.
        :class:`BenchError` (with the child's stderr) when it exits first."""
        ready, _, _ = select.select([self.report], [], [], READY_TIMEOUT_S)
        line = self.report.readline() if ready else ""
        if not line.startswith("ready "):
            self.proc.kill()
            self.proc.wait()
            raise BenchError(f"ringtool trace did not start: {self._stderr()[-500:]}")
        self.ready_at = time.monotonic()
        self.ready_cpu_s = float(line.split()[1])
        return self.ready_at - self.started

    def finish(self, *, interrupt: bool = False) -> ChildResult:
        """Waits for the end (after SIGINT when ``interrupt``); the summary and CPU."""
        if interrupt:  # os.kill, not send_signal: that would reap the child (no rusage)
            os.kill(self.proc.pid, signal.SIGINT)
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        line = self.report.readline()
        self.report.close()
        if not line:
            raise BenchError(f"ringtool trace gave no summary: {self._stderr()[-3000:]}")
        end = json.loads(line)
        return ChildResult(end["summary"], usage.ru_utime + usage.ru_stime,
                           end["cpu_s"] - self.ready_cpu_s, self.proc.returncode)  # fmt: skip

    def _stderr(self) -> str:
        """What the child wrote on stderr so far."""
        self._err.seek(0)
        return self._err.read().decode("utf-8", "backslashreplace").strip()

    def kill(self) -> None:
        """Ends the child if it still runs (cleanup after a failure)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.report.close()
        self._err.close()


__all__ = ["COMM", "ChildResult", "Loop", "LoopResult", "TraceChild", "build_loop",
           "run_loop", "task_cpu_ns"]  # fmt: skip
