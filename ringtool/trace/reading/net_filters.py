"""Which TC filters on an interface's clsact hooks are ringtool's, and whose.

ringtool's net source (:mod:`ringtool.trace.reading.net`) adds one direct-action ``bpf`` filter
per direction at priority :data:`FILTER_PRIO`, handle 1, with the filter name
(``TCA_BPF_NAME``, shown by ``tc filter show`` and pyroute2) :func:`filter_name`:
``ringtool/PID-START/FUNCTION`` (``START``: the process's start time,
:mod:`ringtool.kernel.proc_start`). A process killed with SIGKILL (or by the OOM
killer) cannot remove them: they stay attached, and adding ours again fails with EEXIST.

:func:`classify` sorts what is on a hook: filters of a process that is gone (no process
has that pid and start time; whatever now has the pid, and whatever its command line)
are *leftovers*, which the net source replaces; a filter of a process still running
(a ``ringtool`` command or a program using the net source in-process), or anything
else at our priority (also a filter named as older ringtools named them, without a
start time or without a pid: such a ringtool may still run), is a *conflict* (the
source is refused with a message naming it); every other filter is *foreign*: left
alone, and named in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ringtool.kernel.proc_start import is_running

FILTER_PRIO = 49152  # a fixed priority: our filters are found (and deleted) by it
#: The functions of bpf/trace_net.c attached as filters.
FUNCTIONS = ("trace_net_ingress", "trace_net_egress")
_PREFIX = "ringtool/"


def filter_name(function: str, key: str) -> str:
    """The ``TCA_BPF_NAME`` of ringtool's filter running ``function`` for the process
    ``key`` (:func:`ringtool.kernel.proc_start.process_key`: ``PID-START``)."""
    return f"{_PREFIX}{key}/{function}"


def owner(name: str) -> str | None:
    """The process key (``PID-START``) in a :func:`filter_name`; None: not one."""
    if not name.startswith(_PREFIX):
        return None
    key, _, function = name[len(_PREFIX) :].partition("/")
    pid, _, start = key.partition("-")
    return key if pid.isdigit() and start.isdigit() and function in FUNCTIONS else None


@dataclass(frozen=True, slots=True)
class TcFilter:
    """One filter on a hook: ``hook`` ``"ingress"``/``"egress"``, its priority, handle,
    kind (``bpf``, ``u32``, ...) and name (a bpf filter's ``TCA_BPF_NAME``, else ``""``)."""

    hook: str
    prio: int
    handle: int
    kind: str
    name: str

    def describe(self) -> str:
        return f"{self.hook} pref {self.prio} {self.kind}" + (
            f" {self.name!r}" if self.name else ""
        )


@dataclass(slots=True)
class Survey:
    """A hook's filters sorted (see the module doc)."""

    leftovers: list[TcFilter] = field(default_factory=list)
    conflicts: list[TcFilter] = field(default_factory=list)
    foreign: list[TcFilter] = field(default_factory=list)


def classify(filters: list[TcFilter], me: str) -> Survey:
    """Sort ``filters`` (this process: key ``me``, ``PID-START``) into a :class:`Survey`."""
    out = Survey()
    for f in filters:
        key = owner(f.name) if f.kind == "bpf" else None
        if f.prio != FILTER_PRIO:
            out.foreign.append(f)
        elif key is not None and key != me and not is_running(key):
            out.leftovers.append(f)
        else:  # at our priority: deleting by priority would take it too
            out.conflicts.append(f)
    return out


def read_filters(ipr: Any, index: int, hooks: dict[str, str]) -> list[TcFilter]:
    """The filters on interface ``index``'s hooks (``hooks``: name -> clsact parent,
    ``"ffff:fff2"``), from pyroute2's ``get_filters``; the per-priority heads the
    kernel lists (handle 0, no options) are left out."""
    out: list[TcFilter] = []
    for hook, parent in hooks.items():
        major, minor = (int(x, 16) for x in parent.split(":"))
        for msg in ipr.get_filters(index=index, parent=(major << 16) | minor):
            if not msg["handle"]:
                continue
            options = msg.get_attr("TCA_OPTIONS")
            name = (options.get_attr("TCA_BPF_NAME") if options is not None else None) or ""
            kind = msg.get_attr("TCA_KIND") or "?"
            out.append(TcFilter(hook, msg["info"] >> 16, msg["handle"], kind, str(name)))
    return out


__all__ = [
    "FILTER_PRIO",
    "FUNCTIONS",
    "Survey",
    "TcFilter",
    "classify",
    "filter_name",
    "owner",
    "read_filters",
]
