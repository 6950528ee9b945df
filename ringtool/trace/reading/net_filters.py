"""Which TC filters on an interface's clsact hooks are ringtool's, and whose.

ringtool's net source (:mod:`ringtool.trace.reading.net`) adds one direct-action ``bpf`` filter
per direction at priority :data:`FILTER_PRIO`, handle :data:`FILTER_HANDLE`, with the
filter name (``TCA_BPF_NAME``, shown by ``tc filter show`` and pyroute2)
:func:`filter_name`: ``ringtool/PID-START-NS/FUNCTION`` (``START``: the process's start
time; ``NS``: the PID and time namespaces both are relative to,
:func:`ringtool.kernel.proc_start.namespace_key`). A process killed with SIGKILL (or by
the OOM killer) cannot remove them: they stay attached, and adding ours again fails
with EEXIST.

:func:`classify` sorts what is on a hook: filters of a process of our namespaces that
is gone (no process has that pid and start time; whatever now has the pid, and whatever
its command line) are *leftovers*, which the net source replaces; a filter of a process
still running (a ``ringtool`` command or a program using the net source in-process), of
other namespaces (a container sharing the host's network namespace but not its PID or
time namespace: whether its process runs cannot be told here, unless no process is left
in its PID namespace, seen from the initial one: then it is a leftover,
:func:`ringtool.kernel.proc_start.liveness`), or anything else at our
priority (also a filter named as older ringtools named them, without a namespace key, a
start time or a pid: such a ringtool may still run), is a *conflict* (the source is
refused with a message naming it); every other filter is *foreign*: left alone, and
named in a note. A filter is only ever deleted by its handle (its own, or a leftover's
as listed), never by priority: that would take every filter there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ringtool.kernel.proc_start import liveness

FILTER_PRIO = 49152  # a fixed priority: our filters are found by it
#: The handle of each of our filters (one per hook): what deletes it.
FILTER_HANDLE = 1
#: The functions of bpf/trace_net.c attached as filters.
FUNCTIONS = ("trace_net_ingress", "trace_net_egress")
_PREFIX = "ringtool/"


def filter_name(function: str, key: str, ns: str) -> str:
    """The ``TCA_BPF_NAME`` of ringtool's filter running ``function`` for the process
    ``key`` (:func:`ringtool.kernel.proc_start.process_key`: ``PID-START``) of the
    namespaces ``ns`` (:func:`ringtool.kernel.proc_start.namespace_key`)."""
    return f"{_PREFIX}{key}-{ns}/{function}"


def owner(name: str) -> tuple[str, str] | None:
    """The process key (``PID-START``) and namespace key in a :func:`filter_name`;
    None: not one (also the names of older ringtools)."""
    if not name.startswith(_PREFIX):
        return None
    who, _, function = name[len(_PREFIX) :].partition("/")
    parts = who.split("-")
    if len(parts) != 3 or function not in FUNCTIONS:
        return None
    pid, start, ns = parts
    ns_ok = ns == "?" or all(p.isdigit() for p in ns.split("_"))
    return (f"{pid}-{start}", ns) if pid.isdigit() and start.isdigit() and ns_ok else None


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


def classify(filters: list[TcFilter], me: str, ns: str) -> Survey:
    """Sort ``filters`` (this process: key ``me``, ``PID-START``, in the namespaces
    ``ns``, :func:`ringtool.kernel.proc_start.namespace_key`) into a :class:`Survey`."""
    out = Survey()
    for f in filters:
        who = owner(f.name) if f.kind == "bpf" else None
        if f.prio != FILTER_PRIO:
            out.foreign.append(f)
        elif who is not None and who != (me, ns) and liveness(*who, ns) is False:
            out.leftovers.append(f)
        else:  # running, or not ours to judge: at our priority, ours cannot be added
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
    "FILTER_HANDLE",
    "FILTER_PRIO",
    "FUNCTIONS",
    "Survey",
    "TcFilter",
    "classify",
    "filter_name",
    "owner",
    "read_filters",
]
