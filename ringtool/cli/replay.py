"""``ringtool replay FILE...``: a recording (``ringtool trace --record``) shown again,
through the trace's outputs and filters (:mod:`ringtool.trace.replay`). Needs no
privileges: nothing is loaded into the kernel."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from ringtool.cli import validate as v
from ringtool.event.fields import FIELD_NAMES
from ringtool.trace.reading import sources

EPILOG = """\
The recording's events go to columns (default), --json or --csv, with the trace's
filters; then the summary, with the recording's drops and losses as they were live.
A file the recorder did not finish (killed) is shown to its last whole batch, then
one line says where it stops (exit 1).

examples:
  ringtool replay run.arrows                       # columns, all at once
  ringtool replay run.arrows --json > run.jsonl    # the JSON lines of the live run
  ringtool replay run.arrows --speed 1 -c bash     # at the recorded pace, bash only
  ringtool replay run.0001.arrows run.0002.arrows  # a rotated recording's parts
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "replay",
        help="show a recording (trace --record) again: columns, JSON or CSV, filtered",
        description="Replay a recording made with ringtool trace --record FILE.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="the recording (a rotated one's parts, in order)")  # fmt: skip
    p.add_argument("-p", "--pid", type=v.integer(1, v.PID_MAX), help="only this process (tgid)")
    p.add_argument("-c", "--comm", type=v.comm, help="only processes with this name (comm)")
    p.add_argument("-u", "--uid", type=v.uid, metavar="UID", help="only tasks of this user")
    p.add_argument("-n", "--name", type=v.regex, metavar="REGEX",
                   help="only processes whose name matches REGEX (re.search)")  # fmt: skip
    p.add_argument("-x", "--failed", action="store_true",
                   help="failed calls only: opens and execs that failed, TCP connections "
                   "that never reached ESTABLISHED")  # fmt: skip
    p.add_argument("--events", type=v.name_list(sources.ALL_EVENTS), metavar="LIST",
                   help=f"only these sources' events: {','.join(sources.ALL_EVENTS)}")  # fmt: skip
    p.add_argument("--speed", type=v.number(above=0, hi=1e6), metavar="N",
                   help="at N times the recorded pace (default: all at once)")  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON lines on stdout")
    out.add_argument("--csv", action="store_true", help="CSV (RFC 4180) with a header line")
    p.add_argument("--fields", type=v.name_list(FIELD_NAMES), metavar="A,B,C",
                   help="only these event fields, in this order")  # fmt: skip
    p.add_argument("-w", "--wide", action="store_true", help="columns: never cut lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ringtool.trace.outputs import RunConfig
    from ringtool.trace.replay import ReplayFilter, replay

    mode = "json" if args.json else "csv" if args.csv else "columns"
    width = None if args.wide or not sys.stdout.isatty() else shutil.get_terminal_size().columns
    cfg = RunConfig(mode=mode, fields=args.fields, width=width)
    flt = ReplayFilter(pid=args.pid, comm=args.comm, uid=args.uid, name=args.name,
                       sources=args.events, failed=args.failed)  # fmt: skip
    return replay(args.files, cfg, flt, sys.stdout, speed=args.speed)
