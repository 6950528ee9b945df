"""What a BPF program needs from the running kernel, as plain data.

The event types say what they need (:mod:`ringtool.event.registry`), the trace sources
gather their types' needs (:mod:`ringtool.trace.reading.sources`) and hand them to the loader
(:func:`ringtool.programs.loader.compile_program`), which turns each into the ``-D``
constants the running kernel calls for. Nothing here reads the kernel: these are
names (tracepoints, their fields, BTF members) and the ``-D`` constant each one sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StringField:
    """A string field of tracepoint ``category:event`` read by a program whose layout
    differs between kernels; ``define`` selects the program's code path (1:
    ``__data_loc``, 0: ``char[N]``; :mod:`ringtool.programs.tracepoints`)."""

    category: str
    event: str
    field: str
    define: str


@dataclass(frozen=True, slots=True)
class OptionalTracepoints:
    """Tracepoints ``events`` of ``category`` that a program traces only where the
    kernel has all of them (``define`` = 1; :mod:`ringtool.programs.tp_presence`)."""

    category: str
    events: tuple[str, ...]
    define: str


@dataclass(frozen=True, slots=True)
class BtfMember:
    """A member of a kernel struct a program reads by address (``bpf_probe_read_kernel``
    of an object's pointer plus its offset), ``member`` as ``"struct.member"``, an
    integer of ``size`` bytes; ``define``: the ``-D`` constant its offset in the running
    kernel's BTF is given as (absent where the BTF does not show it:
    :func:`ringtool.programs.kernel_features.member_defines`)."""

    member: str
    size: int
    define: str


@dataclass(frozen=True, slots=True)
class KernelNeeds:
    """Everything one program (or one event type) needs from the kernel.

    ``string_fields``: tracepoint strings whose layout varies; ``optional``:
    tracepoints that may be missing; ``task_members``: the members of ``task_struct``
    read straight from the current task through its BTF where the kernel allows it
    (``task_struct.comm``, ``task_struct.cred``, ...: each the first step of one chain
    of :data:`ringtool.programs.kernel_features.FIELD_CHAINS`); ``task_storage``:
    per-thread state kept in task storage where the kernel has it (else hash maps);
    ``members``: other structs' members read by address (:class:`BtfMember`)."""

    string_fields: tuple[StringField, ...] = ()
    optional: tuple[OptionalTracepoints, ...] = ()
    task_members: tuple[str, ...] = ()
    task_storage: bool = False
    members: tuple[BtfMember, ...] = ()

    @classmethod
    def union(cls, needs: Iterable[KernelNeeds]) -> KernelNeeds:
        """What all of ``needs`` together need: each entry once, in first-seen order."""
        items = list(needs)
        return cls(
            string_fields=_once(n.string_fields for n in items),
            optional=_once(n.optional for n in items),
            task_members=_once(n.task_members for n in items),
            task_storage=any(n.task_storage for n in items),
            members=_once(n.members for n in items),
        )


#: A program that needs nothing of the kernel beyond BPF itself.
NO_NEEDS = KernelNeeds()


def _once(groups: Iterable[tuple[_T, ...]]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(x for group in groups for x in group))


__all__ = ["NO_NEEDS", "BtfMember", "KernelNeeds", "OptionalTracepoints", "StringField"]
