"""Which optional tracepoints the running kernel has (tracefs), as ``-D`` constants.

Some syscalls a BPF source traces do not exist everywhere: ``open(2)`` and
``creat(2)`` have no syscall (so no ``syscalls:sys_enter_open``) on arm64,
``openat2(2)`` came with Linux 5.6, ``open_by_handle_at(2)`` needs CONFIG_FHANDLE. A
``TRACEPOINT_PROBE`` on a missing tracepoint cannot attach, so the source compiles
each such pair of probes only under its ``TRACE_HAVE_*`` constant: ``1`` when both
``events/<category>/<event>/`` directories (enter and exit) exist in tracefs, else
``0``. The program's needs list them (:class:`ringtool.kernel.needs.OptionalTracepoints`,
given by the caller); :func:`presence_defines` reads tracefs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ringtool.kernel.needs import OptionalTracepoints
from ringtool.programs.tracepoints import TRACEFS_DIRS


def has_events(category: str, events: Iterable[str], tracefs: Iterable[Path]) -> bool:
    """Whether the first tracefs that has ``events/<category>`` has every one of
    ``events`` (False when no tracefs is readable)."""
    for root in tracefs:
        base = root / "events" / category
        if base.is_dir():
            return all((base / event).is_dir() for event in events)
    return False


def presence_defines(
    optional: Iterable[OptionalTracepoints], tracefs: Iterable[Path] = TRACEFS_DIRS
) -> dict[str, int | str]:
    """``TRACE_HAVE_*`` -> 1 or 0 for every group of ``optional`` (a program's needs)."""
    roots = tuple(tracefs)
    return {o.define: int(has_events(o.category, o.events, roots)) for o in optional}


__all__ = ["has_events", "presence_defines"]
