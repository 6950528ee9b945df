"""Hand-filled ``TraceStats`` for the TUI and histogram tests (no kernel)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ringtool.event.layout import load_layout
from ringtool.trace.report.stats import TraceStats

LAYOUT = load_layout()
#: The sources every hand-filled TraceStats has.
SOURCES = ["exec", "open", "syscalls"]


def new_stats(syscall_name: Callable[[int], str] | None = None) -> TraceStats:
    """Empty statistics of the default layout: 2 CPUs, :data:`SOURCES`, started at 0."""
    if syscall_name is None:
        return TraceStats(LAYOUT.type_names, 2, SOURCES, start=0.0)
    return TraceStats(LAYOUT.type_names, 2, SOURCES, start=0.0, syscall_name=syscall_name)


def open_batch(pids: Any, comms: bytes | Sequence[bytes]) -> np.ndarray[Any, Any]:
    """``open`` records of the given pids (an array) and comms (one for all, or one each)."""
    arr = np.zeros(len(pids), dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("open")
    arr["h"]["pid"] = pids
    arr["h"]["comm"] = comms
    return arr
