"""``ringtool bench trace``'s ``trace-cpuwait`` row: what the cpuwait source costs
each context switch, beside what the default sources cost there.

The producer is ``csrc/switch_loop.c``: two processes pinned to CPU 0 hand a byte
back and forth over two pipes, so each round trip is two context switches and two
wakeups (the cpuwait source's tracepoints: sched_switch twice, sched_wakeup twice)
and four syscalls (two writes, two reads: what the default sources' ``syscalls``
program sees). Its wall time per round trip is measured untraced, with ``ringtool
trace --events cpuwait --quiet`` and with ``ringtool trace --quiet`` (the default
sources), both tracing the whole machine as a user runs them (the trace itself
pinned to CPU 1, its BPF programs running on CPU 0 in the producer's switches and
syscalls), in alternating rounds; the median of each. ``*_added_ns_per_switch``:
the traced time minus the untraced one, per context switch (a round trip's half).
Only numbers; nothing here is asserted.
"""

from __future__ import annotations

import secrets
import statistics
import subprocess
from pathlib import Path
from typing import Any

from ringtool.bench.cbuild import build_c
from ringtool.bench.trace_proc import TraceChild
from ringtool.errors import BenchError

PRODUCER_CPU = 0
TRACE_CPU = 1
ROUNDS = 4
#: The traced runs: name -> ``ringtool trace`` arguments.
RUNS = {"cpuwait": ["--events", "cpuwait", "--quiet"], "default": ["--quiet"]}


def _loop(binary: Path, seconds: float) -> float:
    """One producer run: CPU ns (both processes) per round trip."""
    proc = subprocess.run([str(binary), str(PRODUCER_CPU), f"{seconds:.3f}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise BenchError(f"{binary.name}: {proc.stderr.strip() or proc.returncode}")
    rounds, _wall_ns, cpu_ns = (int(x) for x in proc.stdout.split())
    return cpu_ns / rounds


def _traced(binary: Path, seconds: float, args: list[str]) -> float:
    child = TraceChild(args, TRACE_CPU)
    try:
        child.wait_ready()
        ns = _loop(binary, seconds)
        child.finish(interrupt=True)
    finally:
        child.kill()
    return ns


def cpuwait_cost(tmp: Path, seconds: float) -> dict[str, Any]:
    """The ``trace-cpuwait`` row (see the module doc)."""
    binary = build_c("switch_loop.c", tmp / f"rt_switch_{secrets.token_hex(3)}")
    runs: dict[str, list[float]] = {"untraced": [], **{k: [] for k in RUNS}}
    slice_s = max(0.5, seconds / ROUNDS)
    for _ in range(ROUNDS):
        runs["untraced"].append(_loop(binary, slice_s))
        for name, args in RUNS.items():
            runs[name].append(_traced(binary, slice_s, args))
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {
        "bench": "trace-cpuwait",
        "untraced_ns_per_roundtrip": round(med["untraced"], 1),
        **{f"{k}_ns_per_roundtrip": round(med[k], 1) for k in RUNS},
        **{f"{k}_added_ns_per_switch": round((med[k] - med["untraced"]) / 2, 1) for k in RUNS},
        "rounds": ROUNDS, "slice_s": slice_s,
    }  # fmt: skip


__all__ = ["cpuwait_cost"]
