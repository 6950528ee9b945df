"""``ringtool trace``: live tracing of exec/exit/fork, open, syscalls and net.

The privilege check runs before anything imports BCC, so an unprivileged user gets
one line and a non-zero exit. Heavy modules are imported only in :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ringtool.errors import RingtoolError
from ringtool.kernel.privileges import require_bpf_privileges

EVENTS = ("exec", "open", "syscalls", "net")
DEFAULT_EVENTS = ("exec", "open", "syscalls")

EPILOG = """\
output: the live TUI when stdout is a terminal (keys: q quit, p pause, s sort,
/ filter by comm), else columns; --json for JSON lines.

examples:
  sudo ringtool trace                          # TUI, exec/exit/fork + open + syscalls
  sudo ringtool trace --no-tui -c bash         # columns, only processes named bash
  sudo ringtool trace --json -d 10 > ev.jsonl  # 10 s of JSON lines, then a summary
  sudo ringtool trace --events exec -p 1234    # exec/exit/fork of one process
  sudo ringtool trace --events net -i eth0 --snaplen 128 --pcap out.pcapng
  sudo ringtool trace --json --ordered --window-us 500   # merged in timestamp order
"""


def _events(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    bad = [n for n in names if n not in EVENTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown event source {', '.join(bad) or '(none)'}: choose from {','.join(EVENTS)}"
        )
    return names


def _pages(text: str) -> int:
    n = int(text)
    if n <= 0 or n & (n - 1):
        raise argparse.ArgumentTypeError(f"{n} is not a power of two (1, 2, 4, ... pages)")
    return n


def _positive(text: str) -> float:
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return v


def register(subs: Any) -> None:
    p = subs.add_parser(
        "trace",
        help="trace exec/exit/fork, opens, syscalls and packets live (TUI, columns, JSON)",
        description="Trace processes, file opens, syscalls and network packets with BPF "
        "(RINGBUF per CPU for exec/open/syscalls, PERF_EVENT_ARRAY for net).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-p", "--pid", type=int, help="only this process (tgid)")
    p.add_argument("-c", "--comm", help="only processes with this name (comm, 15 chars)")
    p.add_argument("-d", "--duration", type=_positive, metavar="SECONDS", help="stop after this")
    p.add_argument(
        "--events", type=_events, metavar="LIST",
        help=f"sources, comma-separated: {','.join(EVENTS)} (default "
        f"{','.join(DEFAULT_EVENTS)}, plus net when -i is given)",
    )  # fmt: skip
    p.add_argument("-i", "--iface", help="network interface for the net source (TC clsact)")
    p.add_argument("--snaplen", type=int, default=96, help="packet bytes captured (default 96)")
    p.add_argument(
        "--buffer-pages", type=_pages, default=128,
        help="pages per CPU ring buffer, a power of two (default 128)",
    )  # fmt: skip
    p.add_argument(
        "--interval", type=_positive, default=1.0, help="stats/refresh interval, s (default 1)"
    )
    p.add_argument(
        "--slow-ms", type=_positive, default=100.0,
        help="report syscalls slower than this as events (default 100 ms)",
    )  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON lines on stdout")
    out.add_argument("--no-tui", action="store_true", help="bcc-style columns, 80 wide")
    p.add_argument("--pcap", type=Path, metavar="FILE", help="write net packets as pcapng")
    p.add_argument("--ordered", action="store_true", help="merge CPUs in timestamp order")
    p.add_argument("--window-us", type=float, help="with --ordered: reorder window, µs")
    p.add_argument("--kmes", metavar="SOCKET", help="also publish events via a KMES bridge")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_bpf_privileges("ringtool trace")  # before BCC is imported
    from ringtool.trace.runner import RunConfig, run_trace
    from ringtool.trace.sources import TraceOptions

    events = args.events or (DEFAULT_EVENTS + (("net",) if args.iface else ()))
    if args.snaplen < 0 or args.snaplen > 65535:
        raise RingtoolError(f"--snaplen {args.snaplen} must be within 0..65535")
    if args.pcap is not None and "net" not in events:
        raise RingtoolError("--pcap writes the net source's packets: add -i IFACE")
    if args.window_us is not None and not args.ordered:
        raise RingtoolError("--window-us needs --ordered")
    if args.json:
        mode = "json"
    elif args.no_tui or not sys.stdout.isatty():
        mode = "columns"
    else:
        mode = "tui"
    opts = TraceOptions(
        events=events, pid=args.pid, comm=args.comm, buffer_pages=args.buffer_pages,
        slow_ms=args.slow_ms, iface=args.iface, snaplen=args.snaplen,
    )  # fmt: skip
    cfg = RunConfig(
        mode=mode, duration=args.duration, interval=args.interval, ordered=args.ordered,
        window_us=args.window_us, pcap=args.pcap, kmes=args.kmes,
    )  # fmt: skip
    return run_trace(opts, cfg)
