"""``ringtool replay FILE...``: a recording (``ringtool trace --record``) shown again,
through the trace's outputs and filters (:mod:`ringtool.trace.replay`). Needs no
privileges: nothing is loaded into the kernel."""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from pathlib import Path
from typing import Any

from ringtool.cli import validate as v
from ringtool.event.fields import FIELD_NAMES
from ringtool.trace.reading import sources

EPILOG = """\
On a terminal the recording plays on the trace's dashboard at the recorded pace
(--speed N, --speed max: as fast as it can), with the replay's keys: Space pause,
. one batch, f one second, [ ] 10 s back/forward, { } to the start/end, - + speed
(? lists them). Piped, or with --no-tui, --json, --csv, --fields or --stats, the
events go to columns, JSON or CSV, all at once (or at --speed N), with the trace's
filters; stats lines for the intervals with drops (--stats: every one), then the
summary: the recording's drops and losses as they were live. A file the recorder
did not finish (killed) is shown to its last whole batch, then one line says where
it stops (exit 1).

examples:
  ringtool replay run.arrows                       # the dashboard, at the recorded pace
  ringtool replay run.arrows --speed max -c bash   # the dashboard as fast as it goes, bash only
  ringtool replay run.arrows --no-tui              # columns, all at once
  ringtool replay run.arrows --json > run.jsonl    # the JSON lines of the live run
  ringtool replay run.arrows --stats --speed 1     # columns at the recorded pace, stats lines
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
    p.add_argument("--speed", type=_speed, metavar="N",
                   help="N times the recorded pace, or max: as fast as it can (default: "
                   "the dashboard 1, a stream all at once)")  # fmt: skip
    p.add_argument("--no-tui", action="store_true", help="columns even on a terminal")
    p.add_argument("--stats", action="store_true",
                   help="a stream: the recorded stats line of every interval on stderr "
                   "(else only those with drops or losses)")  # fmt: skip
    p.add_argument("--keep-exited", action="store_true",
                   help="the dashboard keeps exited processes in its table")  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON lines on stdout")
    out.add_argument("--csv", action="store_true", help="CSV (RFC 4180) with a header line")
    p.add_argument("--fields", type=v.name_list(FIELD_NAMES), metavar="A,B,C",
                   help="only these event fields, in this order")  # fmt: skip
    p.add_argument("-w", "--wide", action="store_true", help="columns: never cut lines")
    # what the trace's output rule and header read that replay has not
    p.set_defaults(func=run, quiet=False, flight_recorder=None, tid=None, cgroup=None)


def _speed(text: str) -> float:
    """``--speed``: a number above 0 (at most 1e6), or ``max`` (infinity)."""
    return math.inf if text == "max" else _NUMBER(text)


_NUMBER = v.number(above=0, hi=1e6, unit="(times the recorded pace), or max")


def run(args: argparse.Namespace) -> int:
    from ringtool.cli.trace import output_mode
    from ringtool.cli.trace_targets import shown_filters
    from ringtool.trace.outputs import RunConfig
    from ringtool.trace.replay import ReplayFilter, filtering, replay

    mode = output_mode(args, terminal=sys.stdout.isatty())
    width = None if args.wide or not sys.stdout.isatty() else shutil.get_terminal_size().columns
    cfg = RunConfig(mode=mode, fields=args.fields, width=width, stats_lines=args.stats,
                    keep_exited=args.keep_exited,
                    filters=shown_filters(args, args.events or (), ()))  # fmt: skip
    flt = ReplayFilter(pid=args.pid, comm=args.comm, uid=args.uid, name=args.name,
                       sources=args.events, failed=args.failed)  # fmt: skip
    if mode == "tui":
        from ringtool.trace.replay_dash import replay_dashboard

        return replay_dashboard(args.files, cfg, filtering(flt), speed=args.speed or 1.0)
    speed = None if args.speed is None or math.isinf(args.speed) else args.speed
    return replay(args.files, cfg, flt, sys.stdout, speed=speed)
