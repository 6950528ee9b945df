"""Shared pieces of the dashboard tests: a frame rendered to text, and the script of a
named process that opens a file steadily."""

from __future__ import annotations

import io

from ringtool.trace.dashboard.tui import TraceTui


def frame(tui: TraceTui, buf: io.StringIO) -> str:
    """The dashboard's next frame as text (``buf`` is its console's file)."""
    buf.seek(0)
    buf.truncate()
    tui.console.print(tui.render(), height=tui.console.size[1])
    return buf.getvalue()


def opener_script(pause_s: float) -> str:
    """Python source: names itself ``argv[1]``, prints ``ready``, then opens the file
    ``argv[2]`` until killed, ``pause_s`` seconds apart (0: a tight loop)."""
    pause = f"\n    time.sleep({pause_s})" if pause_s else ""
    return f"""
import sys, time
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[1])
print("ready", flush=True)
while True:
    open(sys.argv[2]).close(){pause}
"""
