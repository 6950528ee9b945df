"""``ringtool kmes-read``: attach to a KMES bridge and print its events.

Drains every CPU buffer (events merged by timestamp within each drain round), decodes
known event types (else shows the payload in hex) and reports lapping and sequence gaps
at the end (on stderr), with the inconsistent metadata snapshots the readers found
(some consumer scribbled the shared page) and the bridge restarts seen. ``--follow``
keeps reading (sleeping in futex_waitv while idle) until Ctrl-C.

The bridge's pid (SO_PEERCRED) is watched with a pidfd: when it dies, kmes-read says so
in one line; without ``--follow`` it exits 1, with ``--follow`` it re-attaches once a
bridge serves the socket again (retrying with backoff, silently) and says so. A new
bridge restarts every CPU's sequence at 1: each restart is counted; events emitted
while no bridge ran were never buffered and cannot be counted. After a generation
switch it asks the bridge for CPUs it does not read yet (a CPU that came online) and
reads them from their first event, with one line saying so.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from ringtool.cli.validate import shown
from ringtool.cli.validate_paths import socket_path
from ringtool.errors import KmesBridgeDiedError, KmesError, RingtoolError
from ringtool.event.kmes_types import TracePayloads
from ringtool.event.safe_text import printable
from ringtool.event.value_text import field_text
from ringtool.kmes.attach import DEFAULT_SOCKET, attach, attach_new
from ringtool.kmes.events import decode
from ringtool.kmes.layout import ORIGINS, Event
from ringtool.kmes.reader import Reader, ReaderStats, wait_any

DESCRIPTION = """\
Attach to a running 'ringtool bridge' and print its events: every CPU's buffer is
drained (events in timestamp order within each round), known events decoded, others
shown in hex. At the end, on stderr: events lost to lapping, sequence gaps, damaged
metadata seen and bridge restarts. If the bridge dies, kmes-read says so and exits 1;
with --follow it waits for a new bridge and re-attaches.
"""

EPILOG = """\
examples:
  sudo ringtool kmes-read                      # what the buffers hold now, then exit
  sudo ringtool kmes-read --follow             # keep reading until Ctrl-C
  sudo ringtool kmes-read -f --new --json      # only new events, as JSON lines
  sudo ringtool kmes-read --socket /tmp/k.sock # a bridge started with --socket
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "kmes-read",
        help="attach to a KMES bridge and print its events",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--socket", type=socket_path, default=DEFAULT_SOCKET, metavar="PATH",
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


#: The fields of an open that a text line writes as the columns do.
_NAMED = frozenset(("flags", "mode"))


def format_text(ev: Event, trace: TracePayloads | None = None) -> str:
    """One line for a terminal: every value (a comm, a file name: whatever the traced
    process chose) made printable, so no escape sequence reaches the terminal; an
    open's ``flags`` by name (``flags=O_RDONLY|O_CLOEXEC``), its ``mode`` in octal."""
    d = event_dict(ev, trace)
    when = datetime.fromtimestamp(ev.timestamp / 1e9, UTC).strftime("%H:%M:%S.%f")
    named = d["name"] == "open"  # an open's flags by name, its mode in octal (columns' way)
    body = (
        " ".join(
            f"{k}={field_text(k, v) if named and k in _NAMED else v}" for k, v in d["data"].items()
        )
        if "data" in d
        else f"payload={d['payload_hex'] or '-'}"
    )
    return printable(f"{when} cpu={ev.cpu_id} seq={ev.seq} {d['origin']}/{d['name']} {body}")


def _print(events: list[Event], as_json: bool, out: TextIO, trace: TracePayloads | None) -> None:
    events.sort(key=lambda e: e.timestamp)
    for ev in events:
        line = json.dumps(event_dict(ev, trace)) if as_json else format_text(ev, trace)
        out.write(line + "\n")
    out.flush()


def summary(
    readers: list[Reader], past: dict[int, ReaderStats] | None = None, restarts: int = 0
) -> list[str]:
    """One line per CPU: the current readers' counts plus ``past`` ones (earlier bridges),
    then the bridge restarts if any."""
    totals = {cpu: ReaderStats() for cpu in past or {}}
    for cpu, st in (past or {}).items():
        totals[cpu].add(st)
    last = {r.cpu: r.last_seq for r in readers}
    for r in readers:
        totals.setdefault(r.cpu, ReaderStats()).add(r.stats)
    lines = []
    for cpu in sorted(totals):
        s = totals[cpu]
        lines.append(
            f"cpu {cpu}: {s.events} events, last seq {last.get(cpu, 0)}, lapped {s.laps} times "
            f"({s.lapped_events} events lost to overwrite), {s.gap_events} events missing "
            f"(dropped by the writer), {s.torn} torn reads retried, "
            f"{s.inconsistent} inconsistent metadata snapshots skipped, "
            f"{s.generations} generation changes"
        )
    if restarts:
        lines.append(f"bridge restarts: {restarts} (sequences restarted at 1 each time)")
    return lines


def _trace_payloads() -> TracePayloads | None:
    """Decoder for `ringtool trace --kmes` events, or None when the layout header
    is not available (such events then print as hex)."""
    try:
        return TracePayloads()
    except (OSError, RingtoolError):
        return None


def _announce(sock: str, readers: list[Reader], verb: str) -> None:
    pid = readers[0].writer_pid if readers else None
    print(
        f"ringtool kmes-read: {verb} {shown(sock)} (bridge pid {pid}): "
        f"CPUs {[r.cpu for r in readers]}, "
        f"capacity {readers[0].capacity if readers else 0}, "
        f"generation {readers[0].generation if readers else 0}",
        file=sys.stderr,
        flush=True,
    )


def _wait_for_bridge(sock: str) -> list[Reader]:
    """Attach again once a bridge serves ``sock`` (quiet retries with backoff)."""
    delay = 0.1
    while True:
        try:
            return attach(sock, start="tail", timeout=1.0)
        except KmesError:
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def _new_cpus(sock: str, readers: list[Reader], switches: int) -> int:
    """After a generation switch: add readers for CPUs the bridge offers now (hotplug)."""
    now = sum(r.stats.generations for r in readers)
    if now == switches:
        return switches
    try:
        added = attach_new(sock, [r.cpu for r in readers], timeout=1.0)
    except KmesError:
        return switches  # the bridge is going away: the drain finds out; retried next round
    if added:
        readers.extend(added)
        print(f"ringtool kmes-read: bridge added CPU(s) {[r.cpu for r in added]}, reading them "
              f"from their first event", file=sys.stderr, flush=True)  # fmt: skip
    return now


def _drain_round(
    readers: list[Reader], args: argparse.Namespace, trace: TracePayloads | None
) -> int:
    batch: list[Event] = []
    for r in readers:
        batch.extend(r.drain())
    if batch:
        _print(batch, args.json, sys.stdout, trace)
    return len(batch)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run(args: argparse.Namespace) -> int:
    # SIGINT and SIGTERM end the read with the summary, also when SIGINT came in
    # ignored (a job started with `&` from a script: Python then keeps it ignored and
    # Ctrl-C's signal did nothing, so `--follow` could only be killed).
    old = {s: signal.signal(s, signal.default_int_handler) for s in _STOP_SIGNALS}
    try:
        return _run(args)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _run(args: argparse.Namespace) -> int:
    readers = attach(args.socket, start="head" if args.new else "tail")
    trace = _trace_payloads()
    _announce(args.socket, readers, "attached to")
    past: dict[int, ReaderStats] = {}
    restarts, rc, switches = 0, 0, 0
    try:
        while True:
            try:
                switches = _new_cpus(args.socket, readers, switches)
                if _drain_round(readers, args, trace):
                    continue
                if args.follow:
                    wait_any(readers, timeout=1.0)
                    continue
                if readers and readers[0].writer_exited():
                    raise KmesBridgeDiedError(readers[0].writer_pid or 0)
                break
            except KmesBridgeDiedError as exc:
                if not args.follow:
                    print(f"kmes-read: bridge (pid {exc.pid}) died", file=sys.stderr)
                    rc = 1
                    break
                print(
                    f"kmes-read: bridge (pid {exc.pid}) died; waiting for it to come back",
                    file=sys.stderr,
                    flush=True,
                )
                for r in readers:
                    past.setdefault(r.cpu, ReaderStats()).add(r.stats)
                    r.close()
                readers = []
                readers = _wait_for_bridge(args.socket)
                restarts, switches = restarts + 1, 0
                _announce(args.socket, readers, "re-attached (sequences restart at 1) to")
    except KeyboardInterrupt:
        pass
    finally:
        for line in summary(readers, past, restarts):
            print(line, file=sys.stderr)
        for r in readers:
            r.close()
    return rc
