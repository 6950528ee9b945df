#!/usr/bin/env python3
"""Drops of ``ringtool trace`` at its default settings with the CPU shared, rings that
grow against ``--no-grow``, in alternating rounds.

Each run: a CPU hog pinned to the tracer's CPU, ``ringtool trace OUTPUT -d D`` pinned
to that CPU (OUTPUT ``--json`` or ``--no-tui``, stdout to a file; with ``--comm``, as
``ringtool bench trace``, ``-c`` the producer's name, ``rt_bench_`` and six hex
digits: only the producer's events, not those of whatever else runs on the machine),
and, once it is
attached, ``ringtool bench trace``'s C producer (``openat("/dev/null")`` + ``close`` at
full speed) pinned to the other CPU for P seconds. From the trace's summary: events,
drops, and the drops after the producer's first second (``drops_at``: the stats
intervals that had drops, by their end). Prints one line per run, then per mode the
medians and ranges. Root, two CPUs at least; run from the checkout root:

    sudo PYTHONPATH=$PWD python3 scripts/measure_ring_growth.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ringtool.bench.trace_proc import Loop, build_loop

TRACER_CPU, PRODUCER_CPU = 1, 0


def _pinned(argv: list[str], cpu: int, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
                            text=True, **kw)  # type: ignore[call-overload]  # fmt: skip


def one_run(
    binary: Path, output: str, grow: bool, seconds: float, out_dir: Path, comm: bool
) -> dict[str, float]:
    hog = _pinned([sys.executable, "-c", "while True: pass"], TRACER_CPU)
    events = open(out_dir / "events.out", "w")  # noqa: SIM115 (closed below)
    argv = [sys.executable, "-m", "ringtool.cli.main", "trace", output,
            "-d", f"{seconds + 2:.0f}", *([] if grow else ["--no-grow"]),
            *(["-c", binary.name] if comm else [])]  # fmt: skip
    if output == "--no-tui":
        argv.append("--wide")
    trace = _pinned(argv, TRACER_CPU, stdout=events, stderr=subprocess.PIPE)
    try:
        assert trace.stderr is not None
        started = None
        for line in trace.stderr:  # the start line: sources attached
            if '"type": "start"' in line or "Tracing..." in line:
                started = time.monotonic()
                break
        assert started is not None, "the trace did not start"
        load_at = time.monotonic() - started  # the producer starts this late (uptime)
        result = Loop(binary, "open", PRODUCER_CPU, seconds).result()
        err = trace.stderr.read()
        trace.wait(timeout=120)
    finally:
        hog.kill()
        hog.wait()
        events.close()
    if output == "--json":
        summary = json.loads((out_dir / "events.out").read_text().splitlines()[-1])
        drops_at = summary["drops_at"]
        dropped, total = summary["dropped"], summary["events"]
        switches = summary["rings"]["switches"]
    else:  # columns: the summary is text; the drop log comes from the stats lines
        dropped, total, drops_at, switches = _columns_summary(err)
    late = sum(m["dropped"] for m in drops_at if m["uptime_s"] > load_at + 2.0)
    return {"events": total, "dropped": dropped, "dropped_after_1s": late,
            "pct": 100 * dropped / max(1, total + dropped), "switches": switches,
            "rate": result.iterations / result.seconds}  # fmt: skip


def _columns_summary(err: str) -> tuple[int, int, list[dict[str, float]], int]:
    """From ``--no-tui``'s stderr: the ``--`` stats lines (uptime, drops so far) and
    the summary's first line."""
    marks, prev, total, dropped, switches = [], 0, 0, 0, 0
    for line in err.splitlines():
        parts = line.split()
        if line.startswith("-- ") and "drops" in parts:
            uptime = float(parts[1].rstrip("s"))
            drops = int(parts[parts.index("drops") + 1])
            if drops > prev:
                marks.append({"uptime_s": uptime, "dropped": drops - prev})
            prev = drops
        elif " events in " in line and " dropped" in line:
            total, dropped = int(parts[0]), int(parts[4])
        elif line.startswith("note: cpu") and "ring grown" in line:
            switches += 1
    return dropped, total, marks, switches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--outputs", default="--json,--no-tui")
    ap.add_argument("--comm", action="store_true", help="trace -c the producer's name")
    args = ap.parse_args()
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_loop(Path(tmp))
        for rnd in range(args.rounds):
            for output in args.outputs.split(","):
                order = (True, False) if rnd % 2 == 0 else (False, True)
                for grow in order:
                    key = f"{output} {'grow' if grow else '--no-grow'}"
                    r = one_run(binary, output, grow, args.seconds, Path(tmp), args.comm)
                    results.setdefault(key, []).append(r)
                    print(f"round {rnd + 1} {key}: {json.dumps(r)}", flush=True)
    print(f"load average: {os.getloadavg()}")
    for key, rs in results.items():

        def med(f: str, rs: list[dict[str, float]] = rs) -> str:
            vals = [r[f] for r in rs]
            return f"{statistics.median(vals):.1f} [{min(vals):.1f}..{max(vals):.1f}]"

        runs_late = sum(1 for r in rs if r["dropped_after_1s"])
        runs_any = sum(1 for r in rs if r["dropped"])
        print(f"{key}: rounds with drops {runs_any}/{len(rs)}, with drops after the 1st "
              f"second {runs_late}/{len(rs)}; dropped % {med('pct')}, dropped after 1 s "
              f"{med('dropped_after_1s')}, switches {med('switches')}, producer "
              f"{med('rate')} it/s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
