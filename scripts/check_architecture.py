#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md is true: it lists every module of ringtool/ (one
table row each, no row for a module that does not exist) and draws the same layers as
the import-linter contract in pyproject.toml. Run by `make lint`; exit 1 with one line
per difference."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text()
    problems: list[str] = []
    listed = set(re.findall(r"^\| `([a-z_/]+\.py)` \|", doc, re.MULTILINE))
    actual = {
        p.relative_to(REPO / "ringtool").as_posix()
        for p in (REPO / "ringtool").rglob("*.py")
        if p.name != "__init__.py"
    }
    problems += [
        f"{m}: a module docs/ARCHITECTURE.md does not list" for m in sorted(actual - listed)
    ]
    problems += [
        f"{m}: listed in docs/ARCHITECTURE.md, no such module" for m in sorted(listed - actual)
    ]
    block = re.search(r"<!-- layers[^>]*-->\s*```\n(.*?)```", doc, re.DOTALL)
    drawn = block.group(1).split("\n")[:-1] if block else []
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in contracts["contracts"] if c["type"] == "layers")
    if drawn != layers:
        problems.append(
            f"the layers drawn in docs/ARCHITECTURE.md ({drawn}) are not "
            f"pyproject.toml's contract ({layers})"
        )
    for line in problems:
        print(f"check_architecture: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
