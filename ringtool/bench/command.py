"""``ringtool bench``: measured comparisons, run side by side in one process.

Speed is only ever reported as numbers and ratios to a baseline from the same run,
never asserted in tests."""

from __future__ import annotations

import argparse
import importlib
import json
from typing import Any

from ringtool.bench import BENCHMARKS
from ringtool.cli import validate as v
from ringtool.cli.validate import integer

EPILOG = """\
examples:
  sudo ringtool bench ringbuf              # ring buffer consumers: ringtool vs BCC vs libbpf
  sudo ringtool bench perfbuf --json       # perf buffer consumers, JSON lines
  sudo ringtool bench trace --seconds 5    # end-to-end trace: delivered, dropped, CPU
  sudo ringtool bench peers --repeats 5    # vs bpftrace, opensnoop (scripts/setup-peers.sh)
  sudo ringtool bench peers --share-cpu    # the same, a busy loop on the tracers' CPU
  sudo ringtool bench primitives           # what each BPF building block costs here
  sudo ringtool bench merge                # merge algorithms: synthetic and real rings
  sudo ringtool bench all --quick          # every benchmark, small sizes
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "bench",
        help="benchmark ringtool's consumers against BCC's (and merge algorithms)",
        description="Run benchmarks side by side in one process and print a table (or JSON "
        "lines with --json). Speeds are reported as numbers and as ratios to a baseline "
        "measured in the same run.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("which", choices=(*BENCHMARKS, "all"), help="which benchmark")
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    p.add_argument(
        "--repeats",
        type=integer(1, 1000),
        default=5,
        help="repeats (bench peers: alternating rounds); the median is kept",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes, for smoke runs")
    p.add_argument(
        "--seconds", type=v.number(0.2, 600, unit="seconds"), default=None,
        help="bench trace: seconds per phase (default 3, 1 with --quick); bench peers: "
        "seconds per tracer and round (default 2, 0.5 with --quick)",
    )  # fmt: skip
    p.add_argument(
        "--share-cpu", action="store_true",
        help="bench peers: a busy loop spins on the tracers' CPU throughout",
    )  # fmt: skip
    p.set_defaults(func=run)


def _primitive_line(r: dict[str, Any]) -> str:
    head = f"{r['bench']:<18} {r['primitive']:<13}"
    if "skipped" in r:
        return f"{head} skipped: {r['skipped']}"
    line = f"{head} {r['ns_per_run']:>8.1f} ns {r['added_ns']:>+8.1f}  {r['does']}"
    if "records" in r:
        line += (f" (records {r['records']}, failed reservations {r['reserve_failed']}, "
                 f"unaccounted {r['unaccounted']})")  # fmt: skip
    return line


def _table(rows: list[dict[str, Any]]) -> str:
    lines: list[str] = []
    if any("ns_per_record" in r for r in rows):
        lines.append(f"{'bench':<18} {'consumer':<20} {'records':>10} {'ns/rec':>9} {'ratio':>7}")
    for r in rows:
        if "primitive" in r:  # bench primitives: ns per run, added to the empty program
            lines.append(_primitive_line(r))
            continue
        if "ns_per_record" not in r:
            extra = " ".join(f"{k}={v}" for k, v in r.items() if k != "bench")
            lines.append(f"{r['bench']:<18} {extra}")
            continue
        ratio = r.get("ratio")
        ratio_s = f"{ratio:7.3f}" if isinstance(ratio, float) else f"{'':>7}"
        lines.append(
            f"{r['bench']:<18} {r['consumer']:<20} {r['records']:>10} "
            f"{r['ns_per_record']:>9.1f} {ratio_s}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    names = BENCHMARKS if args.which == "all" else (args.which,)
    for name in names:
        module = importlib.import_module(f"ringtool.bench.{name}")
        extra: dict[str, Any] = {"seconds": args.seconds} if name in ("trace", "peers") else {}
        if name == "peers":
            extra["share_cpu"] = args.share_cpu
        rows: list[dict[str, Any]] = module.run(repeats=args.repeats, quick=args.quick, **extra)
        if args.json:
            for row in rows:
                print(json.dumps(row), flush=True)
        else:
            print(_table(rows), flush=True)
    return 0
