"""``ringtool mark TEXT``: a marker in every running trace, as ftrace's ``trace_marker``."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subs: Any) -> None:
    p = subs.add_parser(
        "mark",
        help="write a marker into every running ringtool trace (like trace_marker)",
        description="Write TEXT as a mark event into every running ringtool trace: "
        "it is stamped with the kernel's clock as it goes in, so the dashboard, --json, "
        "--kmes and --export show it in order with the kernel's events. Needs Linux 6.1 "
        "(BPF_MAP_TYPE_USER_RINGBUF) and root. Exits 0 only when every running trace "
        "took the marker; otherwise one line says which did not and why.",
        epilog="examples:\n  sudo ringtool mark 'load test starts'\n"
        "  sudo ringtool mark before; make; sudo ringtool mark after",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("text", nargs="+", help="the marker's text (words joined by spaces)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ringtool.trace.reading.mark_send import send_mark

    def note(line: str) -> None:
        print(f"ringtool mark: note: {line}", file=sys.stderr)

    send_mark(" ".join(args.text), note=note)
    return 0
