#!/usr/bin/env python3
"""What ``trace --record``'s own calls cost per event in a live trace, for one or more
trees alternating: ``ringtool trace --events EVENTS -c <the producer> --buffer-pages
1024 --quiet --record FILE`` pinned to CPU 1 while ``bench trace``'s C loop
(:mod:`ringtool.bench.trace_proc`) runs ``--seconds`` on CPU 0 in its ``--mode``; the
thread CPU time (``time.thread_time``) of the recorder's ``publish``, ``tick`` and
``close`` and of the steps within (the copy of each read, ``to_arrow``, the checksum,
the write of a batch), per event, the bytes per event of the file and the run's
drops. Unlike the bench's ``record_added_ns_per_event`` (the whole process's CPU less
another run's) this is the recorder's own time in one run. Each tree's ``ringtool``
is imported from that directory. Run from the checkout root, as root:

    PYTHONPATH=$PWD python3 scripts/measure_record_cpu.py --rounds 3 /work/main $PWD
    PYTHONPATH=$PWD python3 scripts/measure_record_cpu.py --mode mix --events open,exec $PWD
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The steps timed: (module, class or None, function, name).
STEPS = [
    ("ringtool.trace.writers.output_record", "RecordSink", "publish", "publish"),
    ("ringtool.trace.writers.output_record", "RecordSink", "tick", "tick"),
    ("ringtool.trace.writers.output_record", "RecordSink", "close", "close"),
    ("ringtool.trace.writers.output_record", None, "copy_records", "copy"),
    ("ringtool.event.arrow_records", "RecordSchema", "to_arrow", "to_arrow"),
    ("ringtool.event.recording_check", "ColumnsSum", "__call__", "checksum"),  # format 2
    ("ringtool.event.recording_check", "MessageSum", "seal", "checksum"),  # format 3
    ("ringtool.event.recording", "RecordingWriter", "write", "write"),
]


def _timed(fn: Callable[..., Any], name: str, spent: dict[str, float]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.thread_time() - t

    return timed


def child(report: str, args: list[str]) -> int:
    """The trace, its recorder's steps timed; what they took into ``report`` (JSON)."""
    import importlib

    from ringtool.__main__ import main

    spent: dict[str, float] = {}
    events = [0]
    for module, cls, fn, name in STEPS:
        mod = importlib.import_module(module)
        owner = getattr(mod, cls, None) if cls else mod  # a tree may not have it
        if owner is not None and hasattr(owner, fn):
            setattr(owner, fn, _timed(getattr(owner, fn), name, spent))
    sink = importlib.import_module("ringtool.trace.writers.output_record").RecordSink
    publish = sink.publish

    def counted(self: Any, records: Any) -> None:
        events[0] += len(records.events)
        publish(self, records)

    sink.publish = counted
    try:
        return main(["trace", *args])
    finally:
        Path(report).write_text(json.dumps({"events": events[0], "spent": spent}))


def run(tree: Path, binary: Path, mode: str, events: str, seconds: float,
        tmp: Path) -> dict[str, Any]:  # fmt: skip
    """One trace of ``tree`` beside the producer: ns per event of each step."""
    from ringtool.bench.trace_proc import run_loop

    record, report, out = tmp / "m.arrows", tmp / "m.json", tmp / "m.out"
    args = ["--events", events, "-c", binary.name, "--buffer-pages", "1024", "-d",
            f"{seconds + 2.5:.1f}", "--quiet", "--record", str(record), "--force"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with open(out, "w") as f:
        proc = subprocess.Popen([sys.executable, __file__, "--child", str(report), "--", *args],
                                env=env, stdout=f, stderr=subprocess.DEVNULL,
                                preexec_fn=lambda: os.sched_setaffinity(0, {1}))  # fmt: skip
        time.sleep(1.5)  # loaded (from the program cache)
        run_loop(binary, mode, 0, seconds)
        proc.wait()
    summary = json.loads(out.read_text().splitlines()[-1])
    got = json.loads(report.read_text())
    n = max(int(got["events"]), 1)
    ns = {k: round(v * 1e9 / n) for k, v in got["spent"].items()}
    own = ns.get("publish", 0) + ns.get("tick", 0) + ns.get("close", 0)
    load = round(os.getloadavg()[0], 2)
    return {"tree": str(tree), "load": load, "events": n, "dropped": summary["dropped"],
            "recorder_ns": own, **ns,
            "bytes_per_event": round(record.stat().st_size / n, 1)}  # fmt: skip


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[4:]))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="+", type=Path, help="checkouts whose ringtool is run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--mode", default="open", help="the producer's mode (open, mix)")
    p.add_argument("--events", default="open")
    a = p.parse_args()
    from ringtool.bench.trace_proc import build_loop

    with tempfile.TemporaryDirectory(prefix="measure-record-") as d:
        binary = build_loop(Path(d))
        for r in range(a.rounds):
            for tree in a.trees:
                row = run(tree.resolve(), binary, a.mode, a.events, a.seconds, Path(d))
                print(json.dumps({"round": r, **row}), flush=True)


if __name__ == "__main__":
    main()
