"""The export and metrics flags, shared by ``trace``, ``bridge`` and ``collect``.

:func:`add_export_args` adds ``--export URL`` and its companions, :func:`add_metrics_arg`
``--metrics [ADDR:]PORT``; both validate while parsing (argparse turns a bad value into
a one-line usage error, exit 2, before anything is loaded). :func:`export_config`
builds the :class:`~ringtool.export.config.ExportConfig` from the parsed flags.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
from pathlib import Path
from typing import Any

from ringtool.errors import ExportError
from ringtool.export.config import (
    DEFAULT_PREFIX,
    DEFAULT_STREAM,
    FORMATS,
    ExportConfig,
    check_prefix,
    check_stream,
    check_token,
    check_url,
    default_host,
)

#: Where ``--metrics PORT`` listens when no address is given: this machine only.
LOCAL_HOST = "127.0.0.1"


def checked(check: Any) -> Any:
    """An argparse ``type`` that turns ``check``'s ExportError into a usage error."""

    def parse(text: str) -> Any:
        try:
            return check(text)
        except ExportError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def readable_file(flag: str) -> Any:
    def parse(text: str) -> Path:
        path = Path(text)
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{flag} {text}: no such file")
        return path

    return parse


def parse_addr_port(text: str) -> tuple[str, int]:
    """``[ADDR:]PORT``: ``9464`` or ``:9464`` listen on 127.0.0.1 only; another address
    is given explicitly (``0.0.0.0:9464`` for every IPv4 interface, ``[::1]:9464``)."""
    host, _, port_s = text.rpartition(":")
    if not port_s.isdigit() or not 0 < int(port_s) < 65536:
        raise argparse.ArgumentTypeError(
            f"--metrics {text!r}: give [ADDR:]PORT, e.g. 9464 or 127.0.0.1:9464"
        )
    host = host.strip("[]") or LOCAL_HOST
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            raise argparse.ArgumentTypeError(
                f"--metrics {text!r}: {host!r} is not an IP address"
            ) from None
    return host, int(port_s)


def _drain_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"--export-drain {text!r}: seconds, a number >= 0")
    return v


def _queue_mb(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or not 0 < v <= 65536:
        raise argparse.ArgumentTypeError(f"--export-queue-mb {text!r}: MiB, within 0..65536")
    return v


def _replicas(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 5:
        raise argparse.ArgumentTypeError(f"--export-replicas {text!r}: a number from 1 to 5")
    return int(text)


def add_export_args(
    parser: argparse.ArgumentParser, quiet_group: Any = None, *, quiet: bool = True
) -> None:
    """``--export`` and companions; ``--quiet`` (when ``quiet``) goes into
    ``quiet_group`` (the output modes' mutually exclusive group) when given."""
    g = parser.add_argument_group("export to NATS JetStream (see docs/fleet.md)")
    g.add_argument(
        "--export",
        type=checked(check_url),
        metavar="URL",
        help="publish every event to JetStream at nats://[user:pass@]HOST:PORT; "
        "a cluster's servers separated by commas (any that answers is used)",
    )
    g.add_argument(
        "--export-optional",
        action="store_true",
        help="an unreachable broker at start is a note, not an error",
    )
    g.add_argument(
        "--export-stream",
        type=checked(check_stream),
        default=DEFAULT_STREAM,
        metavar="NAME",
        help=f"stream name, created if missing ({DEFAULT_STREAM})",
    )
    g.add_argument(
        "--export-replicas",
        type=_replicas,
        default=0,
        metavar="N",
        help="replicas of a stream it creates (default: 3 when --export names three or "
        "more servers, else 1)",
    )
    g.add_argument(
        "--export-subject-prefix",
        type=checked(check_prefix),
        default=DEFAULT_PREFIX,
        metavar="PREFIX",
        help=f"subjects PREFIX.<host>.<type> ({DEFAULT_PREFIX})",
    )
    g.add_argument(
        "--export-format",
        choices=FORMATS,
        default="json",
        help="json: JSON lines (default); rows: the raw records, compact",
    )
    g.add_argument(
        "--export-creds",
        type=readable_file("--export-creds"),
        metavar="FILE",
        help="file whose first line is user:password",
    )
    g.add_argument(
        "--export-tls-ca",
        type=readable_file("--export-tls-ca"),
        metavar="FILE",
        help="CA bundle that verifies the broker's TLS certificate",
    )
    g.add_argument(
        "--export-drain",
        type=_drain_seconds,
        default=5.0,
        metavar="SECONDS",
        help="at the end, wait this long for acknowledgements (5)",
    )
    g.add_argument(
        "--export-queue-mb",
        type=_queue_mb,
        default=64,
        metavar="MIB",
        help="bound of the queue in front of the broker; beyond it events "
        "count as export_dropped (64)",
    )
    g.add_argument(
        "--host-name",
        type=checked(lambda t: check_token(t, "--host-name")),
        metavar="NAME",
        help="host name in subjects and messages (default: hostname)",
    )
    if not quiet:
        return
    target = quiet_group if quiet_group is not None else parser
    target.add_argument(
        "--quiet",
        action="store_true",
        help="no per-event output: notes on stderr, the summary as JSON",
    )


def add_metrics_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics",
        type=parse_addr_port,
        metavar="[ADDR:]PORT",
        help="serve Prometheus metrics on http://ADDR:PORT/metrics; ADDR is 127.0.0.1 "
        "unless given (0.0.0.0:PORT: every interface)",
    )


def export_config(args: argparse.Namespace) -> ExportConfig | None:
    """The exporter settings of parsed ``args`` (None without ``--export``)."""
    companions = ("export_optional", "export_creds", "export_tls_ca")
    if args.export is None:
        used = [f"--{c.replace('_', '-')}" for c in companions if getattr(args, c, None)]
        if used:
            raise ExportError(f"{', '.join(used)} need --export URL")
        return None
    return ExportConfig(
        url=args.export, stream=args.export_stream, subject_prefix=args.export_subject_prefix,
        fmt=args.export_format, creds=args.export_creds, tls_ca=args.export_tls_ca,
        host=args.host_name or default_host(), optional=args.export_optional,
        drain_s=args.export_drain, queue_bytes=int(args.export_queue_mb * (1 << 20)),
        replicas=args.export_replicas,
    )  # fmt: skip


__all__ = [
    "add_export_args",
    "add_metrics_arg",
    "checked",
    "export_config",
    "parse_addr_port",
    "readable_file",
]
