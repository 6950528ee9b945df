"""``ringtool collect nats://...``: the fleet view of what ``trace --export`` publishes.

Reads the stream with a durable consumer (acknowledged, resumable) and shows per host
events/s, events, kernel drops, lost, export drops, sequence gaps and lag: a live table,
``--json`` lines, or ``--merged``: every host's events in timestamp order. Needs no
privileges (it never touches BPF).
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from typing import Any

from ringtool.export.cli_args import add_metrics_arg, checked, readable_file
from ringtool.export.config import (
    DEFAULT_PREFIX,
    DEFAULT_STREAM,
    MAX_HOSTS,
    check_prefix,
    check_stream,
    check_token,
    check_url,
    display_url,
)

DESCRIPTION = """\
The fleet view of what 'ringtool trace --export' and 'ringtool bridge --export'
publish to NATS JetStream. Reads the stream with a durable consumer (acknowledged,
resumable) and shows per host: events/s, events, kernel drops, lost, export drops,
sequence gaps and lag, as a live table, as JSON lines (--json), or every host's events
in timestamp order (--merged). Needs no privileges: it never touches BPF.
"""

EPILOG = """\
examples:
  ringtool collect nats://broker:4222                 # live fleet table
  ringtool collect nats://broker:4222 --json -d 60    # JSON lines per host per interval
  ringtool collect nats://broker:4222 --merged > all.jsonl   # every host's events, in order
  ringtool collect nats://u:p@broker:4222 --drain --json     # read the backlog, then stop
  ringtool collect nats://n1:4222,nats://n2:4222,nats://n3:4222  # any node of a cluster
"""


def _seconds(flag: str, minimum: float = 0.0) -> Any:
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v <= minimum:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: a number > {minimum:g}")
        return v

    return parse


def _count(flag: str) -> Any:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = 0
        if not 1 <= v <= 1_000_000:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: a whole number from 1 to 1000000")
        return v

    return parse


def register(subs: Any) -> None:
    p = subs.add_parser(
        "collect", help="read many hosts' exported events from NATS JetStream (fleet view)",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument(
        "url",
        type=checked(check_url),
        metavar="URL",
        help="nats://[user:pass@]HOST:PORT or tls://...; a cluster's servers separated by commas",
    )
    p.add_argument(
        "--stream",
        type=checked(lambda t: check_stream(t, "--stream")),
        default=DEFAULT_STREAM,
        help=f"stream name ({DEFAULT_STREAM})",
    )
    p.add_argument(
        "--subject-prefix",
        type=checked(lambda t: check_prefix(t, "--subject-prefix")),
        default=DEFAULT_PREFIX,
        metavar="PREFIX",
        help=f"subjects PREFIX.<host>.<type> ({DEFAULT_PREFIX})",
    )
    p.add_argument(
        "--durable",
        type=checked(lambda t: check_token(t, "--durable")),
        default="ringtool-collect",
        help="durable consumer name: a later run resumes where this one stopped",
    )
    p.add_argument(
        "--creds",
        type=readable_file("--creds"),
        metavar="FILE",
        help="file whose first line is user:password",
    )
    p.add_argument(
        "--tls-ca",
        type=readable_file("--tls-ca"),
        metavar="FILE",
        help="CA bundle that verifies the broker's TLS certificate",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON lines: hosts per interval")
    out.add_argument(
        "--merged", action="store_true", help="all hosts' events as JSON lines, in timestamp order"
    )
    p.add_argument(
        "--window-ms",
        type=_seconds("--window-ms", -1e-9),
        default=2000.0,
        help="--merged: reorder window in ms of event time (2000)",
    )
    p.add_argument(
        "-d", "--duration", type=_seconds("--duration"), metavar="SECONDS", help="stop after this"
    )
    p.add_argument("--drain", action="store_true", help="stop once the backlog is read")
    p.add_argument(
        "--max-hosts",
        type=_count("--max-hosts"),
        default=MAX_HOSTS,
        metavar="N",
        help=f"hosts kept at most; messages of more hosts are refused ({MAX_HOSTS})",
    )
    p.add_argument(
        "--interval", type=_seconds("--interval"), default=1.0, help="refresh interval, s (1)"
    )
    add_metrics_arg(p)
    p.set_defaults(func=run)  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from ringtool.export.collect_view import JsonView, MergedView, TableView
    from ringtool.export.collector import CollectConfig, Collector

    cfg = CollectConfig(
        url=args.url, stream=args.stream, subject_prefix=args.subject_prefix,
        durable=args.durable, creds=args.creds, tls_ca=args.tls_ca, interval=args.interval,
        duration=args.duration, drain=args.drain, timestamps=args.merged,
        max_hosts=args.max_hosts,
    )  # fmt: skip
    view: Any
    if args.merged:
        view = MergedView(sys.stdout, args.window_ms)
    elif args.json:
        view = JsonView(sys.stdout)
    else:
        view = TableView(sys.stdout, f"ringtool collect {display_url(args.url)} {args.stream}")
    collector = Collector(cfg, view)
    metrics = None
    if args.metrics is not None:
        from ringtool.export.metrics import MetricsServer, collect_families

        metrics = MetricsServer(args.metrics, lambda fams: collect_families(fams, collector.fleet))
    old = {
        s: signal.signal(s, lambda *_: collector.stop()) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        return collector.run()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if metrics is not None:
            metrics.close()
