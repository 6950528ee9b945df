"""``ringtool export-stream nats://ADMIN@broker:4222``: create the JetStream stream the
hosts export to, or check it, with the broker admin's credentials (docs/fleet.md):
hosts that may not use the JetStream API then start with ``trace --export``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ringtool.cli import validate as v
from ringtool.cli.export_args import add_broker_url

DESCRIPTION = """\
Create the NATS JetStream stream that 'ringtool trace --export' and 'ringtool bridge
--export' publish to, or check the one there, as the broker's admin (a user allowed
the JetStream API): subjects PREFIX.>, file storage, a 10-minute duplicate window, and
deny_purge and deny_delete (no purge or message delete through the API, whoever asks;
docs/fleet.md says why). An existing stream keeps its limits; it is given deny_purge
and deny_delete when it lacks them. Hosts need no JetStream API right afterwards.
A warning says when the server is older than 2.10.27 (or 2.11.0; Debian 12's 2.9.10):
there any host of the stream's account can still delete it (CVE-2025-30215).
"""

EPILOG = """\
examples:
  ringtool export-stream nats://admin:admin-secret@broker:4222
  ringtool export-stream nats://admin:s@broker:4222 --max-age 604800 --max-bytes 50000000000
  ringtool export-stream nats://n1:4222,nats://n2:4222,nats://n3:4222 --creds admin.creds
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "export-stream", help="create or check the JetStream stream of the export (admin)",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_broker_url(p)
    p.add_argument("--replicas", type=v.integer(1, 5), default=0, metavar="N",
                   help="replicas of a new stream (default: 3 when URL names three or more "
                   "servers, else 1; as trace --export)")  # fmt: skip
    p.add_argument(
        "--max-age", type=v.number(0, 100 * 365 * v.DAY_S, unit="seconds"), default=0.0,
        metavar="SECONDS", help="a new stream removes older events (0: never)",
    )  # fmt: skip
    p.add_argument(
        "--max-bytes", type=v.integer(1, 2**62), default=-1, metavar="BYTES",
        help="a new stream removes the oldest events beyond this size (no limit)",
    )  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ringtool.export.config import default_replicas
    from ringtool.export.stream_setup import StreamSpec, run_setup

    spec = StreamSpec(
        url=args.url, stream=args.stream, subject_prefix=args.subject_prefix, creds=args.creds,
        tls_ca=args.tls_ca, replicas=args.replicas or default_replicas(args.url),
        max_age_s=args.max_age, max_bytes=args.max_bytes,
    )  # fmt: skip
    line, warning = run_setup(spec)
    print(f"ringtool export-stream: {line}")
    if warning:
        print(f"ringtool export-stream: warning: {warning}", file=sys.stderr)
    return 0
