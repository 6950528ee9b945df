"""``ringtool collect nats://...``: the fleet view of what ``trace --export`` publishes.

Reads the stream with a durable consumer (acknowledged, resumable) and shows per host
events/s, events, kernel drops, lost, export drops, sequence gaps and lag: a live table,
``--json`` lines, or ``--merged``: every host's events in timestamp order. Needs no
privileges (it never touches BPF).
"""

from __future__ import annotations

import argparse
import signal
import sys
from functools import partial
from pathlib import Path
from typing import Any

from ringtool.cli import validate as v
from ringtool.cli.export_args import add_broker_url, add_metrics_arg
from ringtool.errors import UsageError
from ringtool.export.config import MAX_HOSTS, check_token, display_url

#: The widest ``--merged`` reorder window, ms of event time: an hour.
WINDOW_MAX_MS = 3_600_000

DESCRIPTION = """\
The fleet view of what 'ringtool trace --export' and 'ringtool bridge --export'
publish to NATS JetStream. Reads the stream with a durable consumer (acknowledged,
resumable) and shows per host: events/s, events, kernel drops, lost, export drops,
sequence gaps and lag, as a live table, as JSON lines (--json), or every host's events
in timestamp order (--merged). --record DIR also keeps each host's events on disk,
in partitions DIR/host=H/date=YYYY-MM-DD/hour=HH/ (docs/record.md) that
'ringtool query DIR' reads, and DuckDB, Spark and Trino read as Parquet once a file
is closed. Needs no privileges: it never touches BPF.
"""

EPILOG = """\
examples:
  ringtool collect nats://broker:4222                 # live fleet table
  ringtool collect nats://broker:4222 --json -d 60    # JSON lines per host per interval
  ringtool collect nats://broker:4222 --merged > all.jsonl   # every host's events, in order
  ringtool collect nats://u:p@broker:4222 --drain --json     # read the backlog, then stop
  ringtool collect nats://n1:4222,nats://n2:4222,nats://n3:4222  # any node of a cluster
  ringtool collect nats://broker:4222 --json --record /srv/fleet  # and every event on disk
  ringtool query /srv/fleet 'SELECT host, count(*) FROM open GROUP BY host'
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "collect", help="read many hosts' exported events from NATS JetStream (fleet view)",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_broker_url(p)
    p.add_argument(
        "--durable", type=v.checked(partial(check_token, what="--durable")),
        default="ringtool-collect",
        help="durable consumer name: a later run resumes where this one stopped",
    )  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON lines: hosts per interval")
    out.add_argument(
        "--merged", action="store_true", help="all hosts' events as JSON lines, in timestamp order"
    )
    p.add_argument(
        "--window-ms", type=v.number(0, WINDOW_MAX_MS, unit="ms"), default=2000.0,
        help="--merged: reorder window in ms of event time (2000)",
    )  # fmt: skip
    p.add_argument(
        "-d", "--duration", type=v.number(above=0, hi=v.DURATION_MAX_S, unit="seconds"),
        metavar="SECONDS",
        help="stop after this",
    )  # fmt: skip
    p.add_argument("--drain", action="store_true", help="stop once the backlog is read")
    p.add_argument(
        "--max-hosts", type=v.integer(1, 1_000_000), default=MAX_HOSTS, metavar="N",
        help=f"hosts kept at most; messages of more hosts are refused ({MAX_HOSTS})",
    )  # fmt: skip
    p.add_argument(
        "--interval", type=v.number(above=0, hi=3600, unit="seconds"), default=1.0,
        help="refresh interval, s (1)",
    )  # fmt: skip
    p.add_argument(
        "--record", type=Path, metavar="DIR",
        help="also write each host's events (either export format) into "
        "DIR/host=H/date=D/hour=HH/",
    )  # fmt: skip
    p.add_argument(
        "--record-rotate", type=_rotate_size, metavar="SIZE",
        help="--record: a new file of a partition past this size (256M; 100M, 1G; at least 64K)",
    )  # fmt: skip
    add_metrics_arg(p)
    p.set_defaults(func=run)  # fmt: skip


def _rotate_size(text: str) -> int:
    size, _ = v.size_or_duration(text)
    if size is None:
        v.bad(f"{text!r}: give a size (100M, 1G): a file's hour partition bounds its time")
    return size


def run(args: argparse.Namespace) -> int:
    from ringtool.export.collect_view import JsonView, MergedView, TableView, Tee
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
    if args.record_rotate is not None and args.record is None:
        raise UsageError("--record-rotate cuts the files of --record DIR: add --record DIR")
    if args.record is not None:
        from ringtool.event.layout import load_layout
        from ringtool.trace.writers.fleet_record import FleetRecorder

        rotate = {} if args.record_rotate is None else {"rotate_bytes": args.record_rotate}
        view = Tee(FleetRecorder(args.record, load_layout(), **rotate), view)
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
