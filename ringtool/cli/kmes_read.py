"""``ringtool kmes-read``: attach to a KMES bridge and print its events.

Drains every CPU buffer (events merged by timestamp within each drain round), decodes
known event types (else shows the payload in hex) and reports lapping and sequence gaps
at the end (on stderr). ``--follow`` keeps reading (sleeping in futex_waitv while idle)
until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from ringtool.cli.validate import socket_path
from ringtool.errors import RingtoolError
from ringtool.kmes.attach import DEFAULT_SOCKET, attach
from ringtool.kmes.events import decode
from ringtool.kmes.reader import Reader, wait_any
from ringtool.protocol.kmes_layout import ORIGINS, Event
from ringtool.trace.kmes_sink import TracePayloads


def register(subs: Any) -> None:
    p = subs.add_parser(
        "kmes-read",
        help="attach to a KMES bridge and print its events",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--socket", type=socket_path, default=DEFAULT_SOCKET,
        help=f"bridge socket ({DEFAULT_SOCKET})",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object per event")
    p.add_argument("--follow", "-f", action="store_true", help="keep reading until Ctrl-C")
    p.add_argument("--new", action="store_true", help="skip events already in the buffers")
    p.set_defaults(func=run)


def event_dict(ev: Event, trace: TracePayloads | None = None) -> dict[str, Any]:
    name, fields = decode(ev.event_type, ev.payload)
    decoded = trace.decode(ev.event_type, ev.payload) if fields is None and trace else None
    if decoded is not None:
        name, fields = decoded
    out: dict[str, Any] = {
        "cpu": ev.cpu_id,
        "seq": ev.seq,
        "timestamp": ev.timestamp,
        "origin": ORIGINS.get(ev.origin_class, str(ev.origin_class)),
        "type": ev.event_type,
        "name": name,
    }
    if fields is None:
        out["payload_hex"] = ev.payload.hex()
    else:
        out["data"] = fields
    return out


def format_text(ev: Event, trace: TracePayloads | None = None) -> str:
    d = event_dict(ev, trace)
    when = datetime.fromtimestamp(ev.timestamp / 1e9, UTC).strftime("%H:%M:%S.%f")
    body = (
        " ".join(f"{k}={v}" for k, v in d["data"].items())
        if "data" in d
        else f"payload={d['payload_hex'] or '-'}"
    )
    return f"{when} cpu={ev.cpu_id} seq={ev.seq} {d['origin']}/{d['name']} {body}"


def _print(events: list[Event], as_json: bool, out: TextIO, trace: TracePayloads | None) -> None:
    events.sort(key=lambda e: e.timestamp)
    for ev in events:
        line = json.dumps(event_dict(ev, trace)) if as_json else format_text(ev, trace)
        out.write(line + "\n")
    out.flush()


def summary(readers: list[Reader]) -> list[str]:
    lines = []
    for r in readers:
        s = r.stats
        lines.append(
            f"cpu {r.cpu}: {s.events} events, last seq {r.last_seq}, lapped {s.laps} times "
            f"({s.lapped_events} events lost to overwrite), {s.gap_events} events missing "
            f"(dropped by the writer), {s.torn} torn reads retried, "
            f"{s.generations} generation changes"
        )
    return lines


def _trace_payloads() -> TracePayloads | None:
    """Decoder for `ringtool trace --kmes` events, or None when the layout header
    is not available (such events then print as hex)."""
    try:
        return TracePayloads()
    except (OSError, RingtoolError):
        return None


def run(args: argparse.Namespace) -> int:
    readers = attach(args.socket, start="head" if args.new else "tail")
    trace = _trace_payloads()
    print(
        f"ringtool kmes-read: attached to {args.socket}: CPUs {[r.cpu for r in readers]}, "
        f"capacity {readers[0].capacity if readers else 0}, "
        f"generation {readers[0].generation if readers else 0}",
        file=sys.stderr,
        flush=True,
    )
    try:
        while True:
            got = 0
            batch: list[Event] = []
            for r in readers:
                evs = r.drain()
                got += len(evs)
                batch.extend(evs)
            if batch:
                _print(batch, args.json, sys.stdout, trace)
            if got:
                continue
            if not args.follow:
                break
            wait_any(readers, timeout=1.0)
    except KeyboardInterrupt:
        pass
    finally:
        for line in summary(readers):
            print(line, file=sys.stderr)
        for r in readers:
            r.close()
    return 0
