"""The event types: ONE table, one entry per ``TRACE_*`` type of ``bpf/trace_event.h``.

Each :class:`EventType` says everything ringtool knows about a kind of event: its
``TRACE_*`` constant and name, the trace source that emits it, its output fields, what
its one-line detail shows, the dashboard panels it appears in, and what it needs from
the running kernel. Every per-type list of ringtool is derived from
:data:`EVENT_TYPES`, never written out a second time: the header constants the layout
names (:data:`ringtool.event.layout.TYPE_CONSTANTS`), the fields
(:data:`ringtool.event.fields.BY_TYPE`), the details
(:data:`ringtool.event.detail.DETAIL`), the source of each type (:data:`SOURCE_OF`:
the trace statistics and the metrics), the dashboard's tail (:func:`types_in`), and
the kernel needs of each source (:mod:`ringtool.trace.reading.sources`) and of all of them
(:data:`NEEDS`: ``ringtool doctor``). docs/ARCHITECTURE.md, "Adding an event type",
lists what a new type touches.

Pure data: imports nothing heavy (the CLI reads it while parsing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ringtool.kernel.needs import (
    NO_NEEDS,
    BtfMember,
    KernelNeeds,
    OptionalTracepoints,
    StringField,
)


class Field(NamedTuple):
    """One output field: ``key`` in the output, record ``column`` (a member of its
    type's :attr:`EventType.record` struct; ``h.NAME`` for the common header),
    ``kind`` (how the column becomes a value: :mod:`ringtool.event.fields`)."""

    key: str
    column: str
    kind: str


@dataclass(frozen=True, slots=True)
class Detail:
    """What a type's one-line detail shows (:mod:`ringtool.event.detail` formats it):
    ``path``, the key of its file name (None: none), shown first and cut at its start
    when the line is too long; ``reads``, the keys the rest of the line is made of."""

    path: str | None
    reads: tuple[str, ...]


#: The dashboard's recent-events tail (:mod:`ringtool.trace.dashboard.tui_recent`) keeps and shows
#: the types in this panel ...
RECENT = "recent"
#: ... and its title names the types in this one ("recent exec/open/net").
RECENT_TITLE = "recent title"
#: Every panel an :class:`EventType` may name.
PANELS = (RECENT, RECENT_TITLE)

#: The prefix of the type constants: ``TRACE_`` + the name in upper case.
TYPE_PREFIX = "TRACE_"
#: The struct of most types' records (a RINGBUF record, :attr:`EventType.record`) ...
EVENT_RECORD = "trace_event"
#: ... and of net's (a perf sample's header, its packet bytes after it).
NET_RECORD = "trace_net"


@dataclass(frozen=True, slots=True)
class EventType:
    """One kind of event (see the module doc).

    ``name``: the ``type`` string of the output (its constant is ``TRACE_`` + the name
    in upper case); ``source``: the trace source that emits it (an ``--events`` name of
    :mod:`ringtool.trace.reading.sources`, or ``mark``: ``ringtool mark``'s markers);
    ``fields``: its own fields after the common ones, in output order;
    ``detail``: its one-line detail; ``panels``: the dashboard panels it appears in
    (:data:`PANELS`); ``needs``: what its program needs from the kernel to emit it;
    ``taskless``: its records have no task (no ``uid``/``gid``, only the common
    header: packets seen by TC programs); ``record``: the ``bpf/trace_event.h``
    struct of its records, whose members its fields' columns are:
    :data:`EVENT_RECORD` (the default), :data:`NET_RECORD` (net packets: perf samples
    of their own, :class:`ringtool.event.records.NetRecords`), or another RINGBUF record
    of ``struct trace_event``'s size that ends in ``pad`` (tcp: ``trace_tcp``), whose
    records are viewed as it (:data:`ringtool.event.layout.RECORD_STRUCTS`)."""

    name: str
    source: str
    fields: tuple[Field, ...]
    detail: Detail
    panels: frozenset[str] = frozenset()
    needs: KernelNeeds = NO_NEEDS
    taskless: bool = False
    record: str = EVENT_RECORD

    @property
    def constant(self) -> str:
        """Its ``#define`` in ``bpf/trace_event.h`` (``TRACE_EXEC``)."""
        return TYPE_PREFIX + self.name.upper()


#: The members of ``task_struct`` a tracing program's common header reads straight from
#: the current task (its comm, its real ids, its cgroup, its ids; bpf/trace_event.h),
#: where the kernel allows it (:mod:`ringtool.programs.kernel_features`).
TASK_HEADER = KernelNeeds(task_members=(
    "task_struct.comm", "task_struct.cred", "task_struct.cgroups", "task_struct.pid",
    "task_struct.tgid",
))  # fmt: skip
#: A tracing program that keeps per-thread state from a syscall's entry to its exit.
_PER_THREAD = KernelNeeds(task_storage=True)


def _syscalls(*names: str) -> tuple[OptionalTracepoints, ...]:
    """The enter/exit tracepoints of syscalls that not every kernel or architecture
    has (``TRACE_HAVE_<NAME>``: 1 where both exist)."""
    return tuple(
        OptionalTracepoints(
            "syscalls", (f"sys_enter_{n}", f"sys_exit_{n}"), f"TRACE_HAVE_{n.upper()}"
        )
        for n in names
    )


_TAIL = frozenset({RECENT, RECENT_TITLE})

#: Every event type, in the order of their constants.
EVENT_TYPES: tuple[EventType, ...] = (
    EventType(
        "exec", "exec",
        (Field("filename", "data", "str"), Field("argv", "data", "argv"),
         Field("argv_truncated", "aux2", "truncated"), Field("ppid", "ppid", "int"),
         Field("ret", "ret", "int"), Field("syscall", "call", "call")),
        Detail("filename", ("argv", "argv_truncated", "ppid", "uid", "ret")),
        panels=_TAIL, needs=TASK_HEADER,
    ),
    EventType(
        "exit", "exec",
        (Field("exit_code", "value", "exit_code"), Field("ppid", "ppid", "int")),
        Detail(None, ("exit_code", "ppid")),
        needs=TASK_HEADER,
    ),
    EventType(
        "fork", "exec",
        (Field("child_pid", "aux", "int"), Field("child_comm", "data", "str"),
         Field("ppid", "ppid", "int")),
        Detail(None, ("child_pid", "child_comm")),
        # sched_process_fork's child_comm: char[16] on 6.1, __data_loc on 6.18
        needs=KernelNeeds.union([TASK_HEADER, KernelNeeds(string_fields=(StringField(
            "sched", "sched_process_fork", "child_comm", "TRACE_FORK_CHILD_COMM_DATA_LOC"),))]),
    ),
    EventType(
        "open", "open",
        (Field("path", "data", "str"), Field("flags", "value", "int"),
         Field("mode", "mode", "int"), Field("ret", "ret", "int"),
         Field("syscall", "call", "call")),
        Detail("path", ("flags", "mode", "ret", "syscall")),
        panels=_TAIL,
        # open/creat: not on arm64; openat2: Linux 5.6; open_by_handle_at: CONFIG_FHANDLE
        needs=KernelNeeds.union([TASK_HEADER, _PER_THREAD, KernelNeeds(
            optional=_syscalls("open", "creat", "openat2", "open_by_handle_at"))]),
    ),
    EventType(
        "syscall", "syscalls",
        (Field("syscall", "aux", "syscall"), Field("nr", "aux", "int"),
         Field("latency_us", "value", "latency_us"), Field("ret", "ret", "int")),
        Detail(None, ("syscall", "latency_us", "ret")),
        needs=KernelNeeds.union([TASK_HEADER, _PER_THREAD]),
    ),
    EventType(
        "net", "net",
        (Field("src", "saddr", "addr"), Field("dst", "daddr", "addr"),
         Field("sport", "sport", "int"), Field("dport", "dport", "int"),
         Field("proto", "proto", "proto"), Field("len", "len", "int"),
         Field("ifindex", "ifindex", "int"), Field("dir", "dir", "direction"),
         Field("captured", "captured", "int")),
        Detail(None, ("dir", "proto", "src", "sport", "dst", "dport", "len")),
        panels=_TAIL, taskless=True, record=NET_RECORD,  # TC: no task, no task members
    ),
    EventType(
        "mark", "mark", (Field("text", "data", "str"),), Detail(None, ("text",)),
        panels=frozenset({RECENT}),  # a clang-built program: no -D needs
    ),
    EventType(
        "tcp", "tcp",
        (Field("family", "family", "int"), Field("laddr", "saddr", "ip"),
         Field("lport", "sport", "int"), Field("raddr", "daddr", "ip"),
         Field("rport", "dport", "int"), Field("active", "active", "flag"),
         Field("tx_bytes", "tx_bytes", "int"), Field("rx_bytes", "rx_bytes", "int"),
         Field("duration_us", "duration_ns", "latency_us"),
         Field("states", "states", "tcp_states"), Field("failed", "states", "tcp_failed"),
         Field("error", "error", "int")),
        Detail(None, ("active", "laddr", "lport", "raddr", "rport", "tx_bytes", "rx_bytes",
                      "duration_us", "failed", "error")),
        panels=frozenset({RECENT}),
        # the owner's header from the task; a socket's counters and error by address
        needs=KernelNeeds.union([TASK_HEADER, KernelNeeds(members=(
            BtfMember("tcp_sock.bytes_acked", 8, "TRACE_TCP_BYTES_ACKED_OFF"),
            BtfMember("tcp_sock.bytes_received", 8, "TRACE_TCP_BYTES_RECEIVED_OFF"),
            BtfMember("sock.sk_err", 4, "TRACE_SOCK_ERR_OFF"),
        ))]),
        record="trace_tcp",
    ),
    EventType(
        "cpuwait", "cpuwait",
        (Field("wait_us", "value", "latency_us"), Field("blocking", "aux", "flag")),
        Detail(None, ("wait_us", "blocking")),
        # the waiting task's members, read by address from the scheduler's pointers
        # (raw tracepoints: no task of its own; bpf/trace_cpuwait.c)
        needs=KernelNeeds(members=(
            BtfMember("task_struct.pid", 4, "TRACE_CPUWAIT_PID_OFF"),
            BtfMember("task_struct.tgid", 4, "TRACE_CPUWAIT_TGID_OFF"),
            BtfMember("task_struct.__state", 4, "TRACE_CPUWAIT_STATE_OFF"),
            BtfMember("task_struct.group_leader", 8, "TRACE_CPUWAIT_LEADER_OFF"),
            BtfMember("task_struct.comm", 16, "TRACE_CPUWAIT_COMM_OFF"),
            BtfMember("task_struct.cred", 8, "TRACE_CPUWAIT_CRED_OFF"),
            BtfMember("cred.uid", 4, "TRACE_CPUWAIT_UID_OFF"),
            BtfMember("cred.gid", 4, "TRACE_CPUWAIT_GID_OFF"),
            BtfMember("task_struct.cgroups", 8, "TRACE_CPUWAIT_CGROUPS_OFF"),
            BtfMember("css_set.dfl_cgrp", 8, "TRACE_CPUWAIT_DFL_CGRP_OFF"),
            BtfMember("cgroup.kn", 8, "TRACE_CPUWAIT_CGROUP_KN_OFF"),
            BtfMember("kernfs_node.id", 8, "TRACE_CPUWAIT_KN_ID_OFF"),
        )),
    ),
)  # fmt: skip

#: Type name -> its entry.
BY_NAME: dict[str, EventType] = {t.name: t for t in EVENT_TYPES}
#: Type name -> the source that emits it (the statistics' and the metrics' ``source``).
SOURCE_OF: dict[str, str] = {t.name: t.source for t in EVENT_TYPES}
#: What every type together needs from the kernel (``ringtool doctor`` checks it all).
NEEDS: KernelNeeds = KernelNeeds.union(t.needs for t in EVENT_TYPES)


def types_in(panel: str) -> tuple[str, ...]:
    """The names of the types that appear in dashboard ``panel`` (:data:`PANELS`)."""
    return tuple(t.name for t in EVENT_TYPES if panel in t.panels)


def types_of(source: str) -> tuple[EventType, ...]:
    """The types ``source`` emits."""
    return tuple(t for t in EVENT_TYPES if t.source == source)


__all__ = [
    "BY_NAME", "EVENT_RECORD", "EVENT_TYPES", "NEEDS", "NET_RECORD", "PANELS", "RECENT",
    "RECENT_TITLE", "SOURCE_OF", "TASK_HEADER", "TYPE_PREFIX", "Detail", "EventType", "Field",
    "types_in", "types_of",
]  # fmt: skip
