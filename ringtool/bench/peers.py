"""``ringtool bench peers``: ringtool against the tracers a user would pick instead.

The producer (``csrc/syscall_loop.c``, :mod:`ringtool.bench.trace_proc`) makes
``openat("/dev/null")`` + ``close`` at full speed pinned to CPU 0; each tracer of
:mod:`ringtool.bench.peer_tracers` runs pinned to CPU 1, tracing every process's
opens and printing one line per event into a file. Each round runs the untraced
baseline and every installed tracer one after the other (so a noisy machine
disturbs them alike), ``seconds`` of producer each; the figures are the medians
over the rounds, with their ranges:

* ``added_ns``: producer CPU per ``openat`` + ``close`` traced minus the baseline's
  of the same round (what the tracer's programs cost the traced program);
* ``producer_per_s``: the producer's iterations per second;
* ``tracer_cpu_ns_per_event``: the tracer's CPU (``/proc`` schedstat of all its
  threads) from just before to just after the producer's run, per event it printed;
* ``seen`` / ``produced``: the producer's events the tracer printed (lines naming
  its comm, one of its own per bench run, and ``/dev/null``) against its ``openat``
  calls, summed over the rounds, and ``missed_pct``.

The baseline runs first in every round; the tracers' order rotates from round to
round, so none is always the one right after the baseline. With ``--share-cpu`` a busy
loop spins on the tracers' CPU for the whole run: each tracer then gets about half a
CPU and waits for it, as on a busy machine (``tracer_cpu_shared`` in every row).

A tracer counts as attached once the kernel lists a program of its process on
``syscalls:sys_exit_openat`` (:mod:`ringtool.kernel.task_fd_query`, what ``bpftool
perf show`` asks). The load average is reported
before and after. Missing peers are rows with ``skipped`` saying how to install
them (``scripts/setup-peers.sh``). Only numbers; nothing here is asserted.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ringtool.bench.cbuild import build_c
from ringtool.bench.peer_tracers import Tracer, tracers
from ringtool.bench.trace_proc import SOURCE, run_loop, task_cpu_ns
from ringtool.errors import BenchError
from ringtool.kernel.parent_death import die_with_parent
from ringtool.kernel.privileges import require_bpf_privileges
from ringtool.kernel.task_fd_query import attached_events

PRODUCER_CPU = 0
TRACER_CPU = 1
ATTACH_TIMEOUT_S = 120.0
#: after the producer: time for the tracer to drain and print what is left
DRAIN_S = 1.0
EXIT_TIMEOUT_S = 30.0
READY_EVENT = "sys_exit_openat"


def attached(pid: int) -> bool:
    """Whether process ``pid`` has a BPF program on :data:`READY_EVENT`."""
    return any(event == READY_EVENT for _, event in attached_events(pid))


def _start_pinned(
    argv: list[str] | tuple[str, ...], cpu: int, **popen: Any
) -> subprocess.Popen[bytes]:
    """``argv`` started pinned to ``cpu`` and killed by the kernel if the bench dies
    without stopping it (SIGKILL, or a SIGTERM with no handler:
    :mod:`ringtool.kernel.parent_death`)."""
    bench = os.getpid()

    def child() -> None:
        os.sched_setaffinity(0, {cpu})
        die_with_parent(bench)

    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=child, **popen)


class Running:
    """A tracer started pinned to :data:`TRACER_CPU`, stdout into ``out``; it dies with
    the bench (:mod:`ringtool.kernel.parent_death`)."""

    def __init__(self, tracer: Tracer, out: Path) -> None:
        self.out = out
        with open(out, "wb") as f, open(out.with_suffix(".err"), "wb") as err:
            self.proc = _start_pinned(tracer.argv, TRACER_CPU, stdout=f, stderr=err)
        self.name = tracer.name

    def wait_attached(self) -> None:
        """Blocks until the programs are attached; :class:`BenchError` if it exits."""
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while not attached(self.proc.pid):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                err = self.out.with_suffix(".err").read_text(errors="replace").strip()
                raise BenchError(f"{self.name} did not attach: {err[-500:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGINT (every tracer here flushes and exits on it), then wait."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def seen(self, comm: str) -> int:
        """Lines of the producer's events (its ``comm`` and ``/dev/null``)."""
        with open(self.out, "rb") as f:
            return sum(1 for ln in f if comm.encode() in ln and b"/dev/null" in ln)


@dataclass
class Samples:
    """One tracer's figures, one entry per round."""

    added_ns: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    cpu_per_event: list[float] = field(default_factory=list)
    seen: int = 0
    produced: int = 0


Run = tuple[float, float, int, int, float]


def _one(tracer: Tracer, binary: Path, seconds: float, tmp: Path) -> Run:
    """One run: producer ns per iteration, iterations/s, events seen, produced, and
    tracer CPU ns (0 for the baseline)."""
    if not tracer.argv:
        r = run_loop(binary, "open", PRODUCER_CPU, seconds)
        return r.cpu_ns / r.iterations, r.iterations / r.seconds, 0, r.iterations, 0.0
    run = Running(tracer, tmp / "out")
    try:
        run.wait_attached()
        time.sleep(0.2)
        cpu0 = task_cpu_ns(run.proc.pid)
        r = run_loop(binary, "open", PRODUCER_CPU, seconds)
        time.sleep(DRAIN_S)
        cpu = task_cpu_ns(run.proc.pid) - cpu0
    finally:
        run.stop()
    seen = run.seen(binary.name)
    return r.cpu_ns / r.iterations, r.iterations / r.seconds, seen, r.iterations, float(cpu)


def _stats(values: list[float], digits: int = 1) -> dict[str, Any]:
    return {"median": round(statistics.median(values), digits),
            "range": [round(min(values), digits), round(max(values), digits)]}  # fmt: skip


@contextlib.contextmanager
def busy_loop(cpu: int | None) -> Iterator[None]:
    """With ``cpu``: a process spinning on that CPU for the block (what a busy machine
    gives a tracer: half a CPU, and waits for it), killed after it, and by the kernel
    if this process dies first; None: nothing."""
    if cpu is None:
        yield
        return
    spin = _start_pinned([sys.executable, "-c", "while True: pass"], cpu)
    try:
        yield
    finally:
        spin.kill()
        spin.wait()


def run(
    *, repeats: int, quick: bool, seconds: float | None = None, share_cpu: bool = False
) -> list[dict[str, Any]]:
    """``repeats`` alternating rounds of ``seconds`` (default 2, 0.5 with ``quick``)
    per tracer; one row per tracer (see the module doc). ``share_cpu``: a busy loop
    runs on the tracers' CPU throughout (:func:`busy_loop`)."""
    require_bpf_privileges("ringtool bench peers")
    secs = seconds if seconds is not None else (0.5 if quick else 2.0)
    todo = [t for t in tracers() if t.missing() is None]
    rows: list[dict[str, Any]] = [{"bench": "peers", "tracer": t.name, "skipped": t.missing()}
                                  for t in tracers() if t.missing() is not None]  # fmt: skip
    load_before = os.getloadavg()
    samples = {t.name: Samples() for t in todo}
    with (
        tempfile.TemporaryDirectory(prefix="rt-bench-peers-") as d,
        busy_loop(TRACER_CPU if share_cpu else None),
    ):
        tmp = Path(d)
        # a comm of its own: other runs of the bench producer (rt_bench_XXXXXX) on the
        # machine are not this one's events
        binary = build_c(SOURCE.name, tmp / f"rt_peer_{secrets.token_hex(3)}")
        for i in range(repeats):
            base = 0.0
            tracers_ = todo[1:]
            k = i % len(tracers_) if tracers_ else 0  # each round starts elsewhere
            for t in [todo[0], *tracers_[k:], *tracers_[:k]]:
                ns, rate, seen, produced, cpu = _one(t, binary, secs, tmp)
                s = samples[t.name]
                base = ns if not t.argv else base
                s.added_ns.append(ns - base)
                s.rate.append(rate)
                s.produced += produced
                if t.argv:
                    s.seen += seen
                    s.cpu_per_event.append(cpu / max(seen, 1))
    load = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    for t in todo:
        s = samples[t.name]
        row: dict[str, Any] = {"bench": "peers", "tracer": t.name, "rounds": repeats,
                               "seconds": secs, "tracer_cpu_shared": share_cpu,
                               "producer_per_s": _stats(s.rate, 0)}  # fmt: skip
        if t.argv:
            row |= {"added_ns": _stats(s.added_ns),
                    "tracer_cpu_ns_per_event": _stats(s.cpu_per_event),
                    "seen": s.seen, "produced": s.produced,
                    "missed_pct": round(100 * (s.produced - s.seen) / s.produced, 2)
                    if s.produced else None}  # fmt: skip
        row["loadavg_before_after"] = load
        rows.append(row)
    return rows


__all__ = ["attached", "run"]
