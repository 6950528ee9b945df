#!/usr/bin/env python3
"""Render docs/trace.md's picture of the ``ringtool trace`` dashboard from a real run.

Runs ``ringtool trace`` (as root) in a detached tmux session of the given size while a
small demo load runs (a few named processes that open files and start short-lived
children), captures the pane with its colours (``tmux capture-pane -e``), turns the
ANSI text into an SVG with rich (``Text.from_ansi`` + ``Console.export_svg``) and the
SVG into a PNG with ``rsvg-convert`` (Debian: ``apt-get install librsvg2-bin``).

    sudo .venv/bin/python scripts/dashboard_png.py --out docs/dashboard.png --size 120x40

Everything on the picture is what the dashboard showed at that moment on this machine
(its other processes included); nothing is drawn by hand.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.helpers.paths import ROOT

# A demo process: names itself, then opens its files and runs /bin/true now and then.
DEMO = """
import subprocess, sys, time
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[1])
rate = float(sys.argv[2])
while True:
    for path in sys.argv[3:]:
        open(path).close()
    if rate < 50:
        subprocess.run(["/bin/true"])
    time.sleep(1 / rate)
"""
DEMOS = (("nginx-worker", 400), ("postgres", 150), ("redis-server", 60), ("cron", 5))


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def capture(width: int, height: int, seconds: float, keys: list[str]) -> str:
    """The pane's text with its escape sequences after ``seconds`` of tracing."""
    session = f"rt-png-{uuid.uuid4().hex[:8]}"
    cmd = f"unset COLUMNS LINES; cd {ROOT} && {sys.executable} -m ringtool.cli.main trace"
    tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), cmd)
    try:
        deadline = time.monotonic() + 90
        # the first stats (the header's uptime): keys before them would act on no rows
        while " up 0:" not in tmux("capture-pane", "-p", "-t", session):
            if time.monotonic() > deadline:
                raise SystemExit("the dashboard did not start within 90 s")
            time.sleep(0.3)
        for key in keys:
            tmux("send-keys", "-t", session, key)
        time.sleep(seconds)
        return tmux("capture-pane", "-e", "-p", "-t", session)
    finally:
        tmux("send-keys", "-t", session, "q")
        time.sleep(1)
        tmux("kill-session", "-t", session)


def to_svg(ansi: str, width: int, title: str) -> str:
    from rich.console import Console
    from rich.terminal_theme import MONOKAI
    from rich.text import Text

    console = Console(record=True, width=width, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor")  # fmt: skip
    console.print(Text.from_ansi(ansi.rstrip("\n")), end="", overflow="crop", no_wrap=True)
    svg = console.export_svg(title=title, theme=MONOKAI)
    # rich keeps runs of spaces as U+00A0; without xml:space="preserve" rsvg-convert
    # drops a line's leading ones (the right half of the screen slid to the left)
    return svg.replace("<svg ", '<svg xml:space="preserve" ', 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard.png")
    p.add_argument("--size", default="120x40", help="terminal WIDTHxHEIGHT (120x40)")
    p.add_argument("--seconds", type=float, default=6.0, help="tracing before the capture")
    p.add_argument("--keys", default="", help="tmux keys sent before waiting, comma-separated")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    for tool in ("tmux", "rsvg-convert"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (apt-get install tmux librsvg2-bin)")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name in ("index.html", "base.db", "dump.rdb", "crontab"):
            (Path(tmp) / name).write_text("x")
            files.append(str(Path(tmp) / name))
        demos = [subprocess.Popen([sys.executable, "-c", DEMO, name, str(rate), *files])
                 for name, rate in DEMOS]  # fmt: skip
        try:
            ansi = capture(width, height, args.seconds, [k for k in args.keys.split(",") if k])
        finally:
            for d in demos:
                d.kill()
                d.wait()
        svg = Path(tmp) / "dashboard.svg"
        svg.write_text(to_svg(ansi, width, "sudo ringtool trace"))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["rsvg-convert", "-o", str(args.out), str(svg)], check=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
