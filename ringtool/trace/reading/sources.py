"""The trace sources: ONE table, one entry per BPF program of ``ringtool trace``.

A :class:`Source` is one ``bpf/trace_*`` program: the event types it emits are the
registry's entries naming it (:func:`ringtool.event.registry.types_of`), and what it
needs from the kernel is what they need together (:attr:`Source.needs`), handed to
the loader as plain data (:func:`ringtool.programs.loader.compile_program`), which
never names a trace file itself. The ``--events`` names (:data:`ALL_EVENTS`), the
default ones (:data:`DEFAULT_EVENTS`) and the RINGBUF sources' files
(:data:`RING_SOURCES`) are derived from :data:`SOURCES`.

Pure data: imports nothing heavy (the CLI reads it while parsing).
"""

from __future__ import annotations

from dataclasses import dataclass

from ringtool.event.registry import EventType, types_of
from ringtool.kernel.needs import KernelNeeds


@dataclass(frozen=True, slots=True)
class Source:
    """One trace source: ``name`` (its ``--events`` name), ``bpf_file`` (in ``bpf/``),
    ``ring``: it writes into the per-CPU RINGBUF group (else into a PERF_EVENT_ARRAY of
    its own: net), ``selectable``: ``--events`` chooses it (else it runs whenever the
    rings do: the markers of ``ringtool mark``), ``default``: on without ``--events``."""

    name: str
    bpf_file: str
    ring: bool
    selectable: bool = True
    default: bool = False

    @property
    def types(self) -> tuple[EventType, ...]:
        """The event types it emits (the registry's entries naming it)."""
        return types_of(self.name)

    @property
    def needs(self) -> KernelNeeds:
        """What its program needs from the kernel: its types' needs together."""
        return KernelNeeds.union(t.needs for t in self.types)


#: Every trace source.
SOURCES: tuple[Source, ...] = (
    Source("exec", "trace_exec.c", ring=True, default=True),
    Source("open", "trace_open.c", ring=True, default=True),
    Source("syscalls", "trace_syscalls.c", ring=True, default=True),
    Source("net", "trace_net.c", ring=False),
    Source("mark", "trace_mark.bpf.c", ring=True, selectable=False),
    Source("tcp", "trace_tcp.c", ring=True),
    Source("disk", "trace_disk.c", ring=True),
    Source("cpuwait", "trace_cpuwait.c", ring=True),
)

#: Source name -> its entry.
SOURCE_NAMED: dict[str, Source] = {s.name: s for s in SOURCES}
#: The RINGBUF sources ``--events`` chooses: name -> BPF file.
RING_SOURCES: dict[str, str] = {s.name: s.bpf_file for s in SOURCES if s.ring and s.selectable}
#: Every ``--events`` name.
ALL_EVENTS: tuple[str, ...] = tuple(s.name for s in SOURCES if s.selectable)
#: The sources traced without ``--events`` (and without ``-i``: net needs an interface).
DEFAULT_EVENTS: tuple[str, ...] = tuple(s.name for s in SOURCES if s.default)

__all__ = ["ALL_EVENTS", "DEFAULT_EVENTS", "RING_SOURCES", "SOURCES", "SOURCE_NAMED", "Source"]
