"""``ringtool doctor``: is this machine ready for ringtool? One line a check."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ringtool.diagnostics import Check, run_checks


def register(subs: Any) -> None:
    p = subs.add_parser(
        "doctor",
        help="check kernel, BPF, perf, tracefs, BCC and headers; print fixes",
        description="Check that this machine can run ringtool. Exit 0 when every "
        "required check passes.",
        epilog="examples:\n  sudo ringtool doctor        # every check, with a fix for each "
        "failure\n  ringtool doctor             # as a user: what works without root",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=run)


def program_cache_check() -> Check:
    """``program cache``: warm / cold / unusable for ``ringtool trace``'s default
    sources and options (advisory: a cold cache only makes the next start slower)."""
    from ringtool.cli.trace import buffer_pages
    from ringtool.trace.reading.options import TraceOptions
    from ringtool.trace.reading.source_loading import cache_state

    defaults = argparse.Namespace(buffer_pages=None, max_buffer_mb=None)  # as `ringtool trace`
    state, detail = cache_state(TraceOptions(buffer_pages=buffer_pages(defaults)))
    fix = {"cold": "run `sudo ringtool trace -d 1` once to fill it",
           "unusable": "see why; meanwhile each `ringtool trace` compiles"}  # fmt: skip
    text = detail if state == "warm" else f"{state}: {detail}"
    return Check("program cache", state == "warm", text, fix.get(state, ""), required=False)


def run(args: argparse.Namespace) -> int:
    checks = [*run_checks(), program_cache_check()]
    utf8 = (sys.stdout.encoding or "").lower().replace("-", "") == "utf8"
    yes, no = ("✓", "✗") if utf8 else ("ok", "XX")
    width = max(len(c.name) for c in checks)
    failed_required = False
    for c in checks:
        mark = yes if c.ok else (no if c.required else "-")
        line = f"{mark} {c.name:<{width}}  {c.detail}"
        if not c.ok and c.fix:
            line += f"\n  {'':<{width}}  fix: {c.fix}"
        print(line)
        failed_required |= c.required and not c.ok
    print(
        "ready"
        if not failed_required
        else "NOT ready: fix the ✗ lines above"
        if utf8
        else "NOT ready: fix the XX lines above"
    )
    return 1 if failed_required else 0
