#!/usr/bin/env python3
"""Write docs/schema.md and docs/trace-events.schema.json from ringtool's field tables
(:mod:`ringtool.trace.report.schema`), or with ``--check`` tell whether the committed
files are what it would write (exit status 1 when not). Run from the checkout root
(``make lint`` checks; tests/unit/trace/test_schema_files.py too)."""

from __future__ import annotations

import sys
from pathlib import Path

from ringtool.trace.report.schema import MARKDOWN_FILE, SCHEMA_FILE, markdown, schema_text

DOCS = Path(__file__).resolve().parent.parent / "docs"


def wanted() -> dict[Path, str]:
    """Each generated file and the text it must hold."""
    return {DOCS / MARKDOWN_FILE: markdown(), DOCS / SCHEMA_FILE: schema_text()}


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print("usage: scripts/gen_schema.py [--check]", file=sys.stderr)
        return 2
    stale = [p for p, text in wanted().items() if not p.exists() or p.read_text() != text]
    if check:
        for p in stale:
            print(f"{p}: differs from the field tables: run scripts/gen_schema.py", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted()[p])
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
