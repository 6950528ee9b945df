"""The broker and metrics flags: ``--export URL`` and its companions (``trace``,
``bridge``), the same broker flags without the ``export-`` prefix (``collect``), and
``--metrics [ADDR:]PORT`` (all three).

Every value is checked while parsing with :mod:`ringtool.cli.validate` (a bad one is a
one-line usage error, exit 2, before anything is loaded): a credentials file and a CA
bundle are read and parsed then, so a problem with one names its flag.
:func:`add_broker_args` defines the flags the exporters and ``collect`` share, once.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from ringtool.cli import validate as v
from ringtool.cli import validate_paths as vp
from ringtool.export.config import (
    CA_MAX,
    CREDS_MAX,
    DEFAULT_PREFIX,
    DEFAULT_STREAM,
    FORMATS,
    ca_context,
    check_prefix,
    check_stream,
    check_token,
    check_url,
    parse_creds,
)

#: A ``type=`` for a broker URL (one, or a cluster's, comma-separated).
broker_url = v.checked(check_url)


def add_broker_url(p: Any) -> None:
    """The positional ``URL`` of a broker (``collect``, ``export-stream``) and the
    broker options (:func:`add_broker_args`) without a prefix."""
    p.add_argument(
        "url", type=broker_url, metavar="URL",
        help="nats://[user:pass@]HOST:PORT or tls://...; a cluster's servers separated by commas",
    )  # fmt: skip
    add_broker_args(p, "")


def add_broker_args(group: Any, prefix: str) -> None:
    """``--{prefix}stream``, ``--{prefix}subject-prefix``, ``--{prefix}creds`` and
    ``--{prefix}tls-ca`` in ``group``: ``prefix`` is ``export-`` for the exporters,
    empty for ``collect``."""
    stream, subjects = f"--{prefix}stream", f"--{prefix}subject-prefix"
    group.add_argument(
        stream, type=v.checked(partial(check_stream, flag=stream)), default=DEFAULT_STREAM,
        metavar="NAME",
        help=f"stream name ({DEFAULT_STREAM})" + (", created if missing" if prefix else ""),
    )  # fmt: skip
    group.add_argument(
        subjects, type=v.checked(partial(check_prefix, flag=subjects)), default=DEFAULT_PREFIX,
        metavar="PREFIX", help=f"subjects PREFIX.<host>.<type> ({DEFAULT_PREFIX})",
    )  # fmt: skip
    group.add_argument(
        f"--{prefix}creds", type=vp.input_file(CREDS_MAX, parse_creds), metavar="FILE",
        help="file whose first line is user:password",
    )  # fmt: skip
    group.add_argument(
        f"--{prefix}tls-ca", type=vp.input_file(CA_MAX, ca_context), metavar="FILE",
        help="CA bundle that verifies the broker's TLS certificate",
    )  # fmt: skip


def add_export_args(
    parser: argparse.ArgumentParser, quiet_group: Any = None, *, quiet: bool = True
) -> None:
    """``--export`` and companions; ``--quiet`` (when ``quiet``) goes into
    ``quiet_group`` (the output modes' mutually exclusive group) when given."""
    g = parser.add_argument_group("export to NATS JetStream (see docs/fleet.md)")
    g.add_argument(
        "--export", type=broker_url, metavar="URL",
        help="publish every event to JetStream at nats://[user:pass@]HOST:PORT; "
        "a cluster's servers separated by commas (any that answers is used)",
    )  # fmt: skip
    g.add_argument(
        "--export-optional", action="store_true",
        help="an unreachable broker at start is a note, not an error",
    )  # fmt: skip
    add_broker_args(g, "export-")
    g.add_argument(
        "--export-replicas", type=v.integer(1, 5), default=0, metavar="N",
        help="replicas of a stream it creates (default: 3 when --export names three or "
        "more servers, else 1)",
    )  # fmt: skip
    g.add_argument(
        "--export-format", choices=FORMATS, default="json",
        help="json: JSON lines (default); rows: the raw records, compact",
    )  # fmt: skip
    g.add_argument(
        "--export-drain", type=v.number(0, v.DAY_S, unit="seconds"), default=5.0,
        metavar="SECONDS",
        help="at the end, wait this long for acknowledgements (5)",
    )  # fmt: skip
    g.add_argument(
        "--export-queue-mb", type=v.number(above=0, hi=65536, unit="MiB"), default=64,
        metavar="MIB",
        help="bound of the queue in front of the broker; beyond it events "
        "count as export_dropped (64)",
    )  # fmt: skip
    g.add_argument(
        "--host-name", type=v.checked(partial(check_token, what="--host-name")),
        metavar="NAME", help="host name in subjects and messages (default: hostname)",
    )  # fmt: skip
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
        type=v.addr_port,
        metavar="[ADDR:]PORT",
        help="serve Prometheus metrics on http://ADDR:PORT/metrics; ADDR is 127.0.0.1 "
        "unless given (0.0.0.0:PORT: every interface)",
    )


__all__ = ["add_broker_args", "add_export_args", "add_metrics_arg", "broker_url"]
