"""Which TC filters on an interface's clsact hooks are ringtool's, and whose.

ringtool's net source (:mod:`ringtool.trace.net`) adds one direct-action ``bpf`` filter
per direction at priority :data:`FILTER_PRIO`, handle 1, with the filter name
(``TCA_BPF_NAME``, shown by ``tc filter show`` and pyroute2) :func:`filter_name`:
``ringtool/PID/FUNCTION``. A process killed with SIGKILL (or by the OOM killer) cannot
remove them: they stay attached, and adding ours again fails with EEXIST.

:func:`survey` sorts what is on a hook: filters of a ringtool that is gone (its pid
does not run ringtool any more) are *leftovers*, which the net source replaces; a
filter of a ringtool still running, or anything else at our priority (also a filter
named as ringtool named them before it put its pid in the name: such a ringtool may
still run), is a *conflict* (the source is refused with a message naming it); every
other filter is *foreign*: left alone, and named in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILTER_PRIO = 49152  # a fixed priority: our filters are found (and deleted) by it
#: The functions of bpf/trace_net.c attached as filters.
FUNCTIONS = ("trace_net_ingress", "trace_net_egress")
_PREFIX = "ringtool/"


def filter_name(function: str, pid: int) -> str:
    """The ``TCA_BPF_NAME`` of ringtool's filter running ``function`` for process ``pid``."""
    return f"{_PREFIX}{pid}/{function}"


def owner(name: str) -> int | None:
    """The pid in a :func:`filter_name`; None: not one."""
    if not name.startswith(_PREFIX):
        return None
    pid, _, function = name[len(_PREFIX) :].partition("/")
    return int(pid) if pid.isdigit() and function in FUNCTIONS else None


def runs_ringtool(pid: int) -> bool:
    """Whether process ``pid`` exists and its command line mentions ringtool."""
    try:
        return b"ringtool" in (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False


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


def classify(filters: list[TcFilter], me: int) -> Survey:
    """Sort ``filters`` (this process: pid ``me``) into a :class:`Survey`."""
    out = Survey()
    for f in filters:
        pid = owner(f.name) if f.kind == "bpf" else None
        if f.prio != FILTER_PRIO:
            out.foreign.append(f)
        elif pid is not None and pid != me and not runs_ringtool(pid):
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
    "runs_ringtool",
]
