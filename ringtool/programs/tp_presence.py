"""Which optional tracepoints the running kernel has (tracefs), as ``-D`` constants.

Some syscalls a BPF source traces do not exist everywhere: ``open(2)`` and
``creat(2)`` have no syscall (so no ``syscalls:sys_enter_open``) on arm64,
``openat2(2)`` came with Linux 5.6, ``open_by_handle_at(2)`` needs CONFIG_FHANDLE. A
``TRACEPOINT_PROBE`` on a missing tracepoint cannot attach, so the source compiles
each such pair of probes only under its ``TRACE_HAVE_*`` constant: ``1`` when both
``events/<category>/<event>/`` directories (enter and exit) exist in tracefs, else
``0``. :data:`OPTIONAL` lists them; :func:`presence_defines` reads tracefs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ringtool.programs.tracepoints import TRACEFS_DIRS


@dataclass(frozen=True, slots=True)
class OptionalEvents:
    """Tracepoints ``events`` of ``category`` that ``sources`` trace only when all
    exist (``define`` = 1)."""

    category: str
    events: tuple[str, ...]
    define: str
    sources: tuple[str, ...]


def _syscall(name: str, define: str, *sources: str) -> OptionalEvents:
    return OptionalEvents("syscalls", (f"sys_enter_{name}", f"sys_exit_{name}"), define, sources)


#: Every optional tracepoint group ringtool's sources use.
OPTIONAL: tuple[OptionalEvents, ...] = (
    _syscall("open", "TRACE_HAVE_OPEN", "trace_open.c"),
    _syscall("creat", "TRACE_HAVE_CREAT", "trace_open.c"),
    _syscall("openat2", "TRACE_HAVE_OPENAT2", "trace_open.c"),
    _syscall("open_by_handle_at", "TRACE_HAVE_OPEN_BY_HANDLE_AT", "trace_open.c"),
)


def has_events(category: str, events: Iterable[str], tracefs: Iterable[Path]) -> bool:
    """Whether the first tracefs that has ``events/<category>`` has every one of
    ``events`` (False when no tracefs is readable)."""
    for root in tracefs:
        base = root / "events" / category
        if base.is_dir():
            return all((base / event).is_dir() for event in events)
    return False


def presence_defines(
    source: str | None = None, tracefs: Iterable[Path] = TRACEFS_DIRS
) -> dict[str, int | str]:
    """``TRACE_HAVE_*`` -> 1 or 0 for every :data:`OPTIONAL` group (of ``source``
    only, when given)."""
    roots = tuple(tracefs)
    return {
        o.define: int(has_events(o.category, o.events, roots))
        for o in OPTIONAL
        if source is None or source in o.sources
    }


__all__ = ["OPTIONAL", "OptionalEvents", "has_events", "presence_defines"]
