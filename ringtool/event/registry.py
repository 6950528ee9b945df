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
    """One output field: ``key`` in the output (its one name in every output: JSON,
    CSV, ``--fields``; the columns' header is :attr:`header`), record ``column`` (a
    member of its type's :attr:`EventType.record` struct; ``h.NAME`` for the common
    header), ``kind`` (how the column becomes a value: :mod:`ringtool.event.fields`),
    ``unit`` (of a quantity: ``s``, ``us``, ``bytes``; ``""``: none) and ``doc``
    (its meaning, one sentence: docs/schema.md is generated from it)."""

    key: str
    column: str
    kind: str
    unit: str = ""
    doc: str = ""

    @property
    def header(self) -> str:
        """Its column header: the key in upper case (``--fields`` takes either)."""
        return self.key.upper()


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
#: The machine-wide connections panel (:mod:`ringtool.trace.dashboard.tui_conns`): its
#: types' records are each a connection at its close (``struct trace_tcp``) ...
CONNECTIONS = "connections"
#: ... and the disks panel (:mod:`ringtool.trace.dashboard.tui_disks`): each a block
#: I/O request at its completion (``struct trace_disk``). Each is on screen while a
#: source of its types runs.
DISKS = "disks"
#: Every panel an :class:`EventType` may name.
PANELS = (RECENT, RECENT_TITLE, CONNECTIONS, DISKS)

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
    of ``struct trace_event``'s size that ends in ``pad`` (tcp: ``trace_tcp``, disk:
    ``trace_disk``), whose records are viewed as it
    (:data:`ringtool.event.layout.RECORD_STRUCTS`); ``doc``: what one event of it is
    (docs/schema.md)."""

    name: str
    source: str
    fields: tuple[Field, ...]
    detail: Detail
    panels: frozenset[str] = frozenset()
    needs: KernelNeeds = NO_NEEDS
    taskless: bool = False
    record: str = EVENT_RECORD
    doc: str = ""

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

#: The fields several types share (one meaning each).
_PPID = Field("ppid", "ppid", "int", "", "the parent's process id (0: unknown)")
_RET = "the syscall's result: "


def _call(what: str) -> Field:
    return Field("syscall", "call", "call", "", f"the syscall that {what} (null: unknown)")


#: Every event type, in the order of their constants.
EVENT_TYPES: tuple[EventType, ...] = (
    EventType(
        "exec", "exec",
        (Field("filename", "data", "str", "", "the file executed, as passed to the syscall"),
         Field("argv", "data", "argv", "",
               "the arguments, argv[0] first (null: not read; cut when argv_truncated)"),
         Field("argv_truncated", "aux2", "truncated", "",
               "true when more arguments were passed than the record holds"),
         _PPID,
         Field("ret", "ret", "int", "", _RET + "0, or -errno of a failed attempt"),
         _call("executed (execve, execveat)")),
        Detail("filename", ("argv", "argv_truncated", "ppid", "uid", "ret")),
        panels=_TAIL, needs=TASK_HEADER,
        doc="an execve/execveat attempt (failed ones too); source exec",
    ),
    EventType(
        "exit", "exec",
        (Field("exit_code", "value", "exit_code", "",
               "the code passed to exit(2)/exit_group(2) (null: ended otherwise, "
               "e.g. by a signal)"),
         _PPID),
        Detail(None, ("exit_code", "ppid")),
        needs=TASK_HEADER,
        doc="a process ended (its thread group leader exited); source exec",
    ),
    EventType(
        "fork", "exec",
        (Field("child_pid", "aux", "int", "", "the new task's id (a new thread's tid)"),
         Field("child_comm", "data", "str", "", "the new task's name (its parent's)"),
         _PPID),
        Detail(None, ("child_pid", "child_comm")),
        # sched_process_fork's child_comm: char[16] on 6.1, __data_loc on 6.18
        needs=KernelNeeds.union([TASK_HEADER, KernelNeeds(string_fields=(StringField(
            "sched", "sched_process_fork", "child_comm", "TRACE_FORK_CHILD_COMM_DATA_LOC"),))]),
        doc="a task made a new task (fork, vfork, clone: threads too); source exec",
    ),
    EventType(
        "open", "open",
        (Field("path", "data", "str", "", "the file name passed to the syscall"),
         Field("flags", "value", "int", "", "the open(2) flags, as a number"),
         Field("mode", "mode", "int", "", "the mode of a created file (permission bits)"),
         Field("ret", "ret", "int", "", _RET + "the file descriptor, or -errno"),
         _call("opened (open, openat, openat2, creat, open_by_handle_at)")),
        Detail("path", ("flags", "mode", "ret", "syscall")),
        panels=_TAIL,
        # open/creat: not on arm64; openat2: Linux 5.6; open_by_handle_at: CONFIG_FHANDLE
        needs=KernelNeeds.union([TASK_HEADER, _PER_THREAD, KernelNeeds(
            optional=_syscalls("open", "creat", "openat2", "open_by_handle_at"))]),
        doc="a file open, at its return; source open",
    ),
    EventType(
        "syscall", "syscalls",
        (Field("syscall", "aux", "syscall", "", "the syscall's name (sys_NR when unknown)"),
         Field("nr", "aux", "int", "", "the syscall's number on this architecture"),
         Field("latency_us", "value", "latency_us", "us",
               "from the syscall's entry to its return, to 0.1 us"),
         Field("ret", "ret", "int", "", _RET + "a value, or -errno")),
        Detail(None, ("syscall", "latency_us", "ret")),
        # start_time: whose a slot of the per-tid array is (bpf/trace_syscalls.c)
        needs=KernelNeeds.union([TASK_HEADER, _PER_THREAD, KernelNeeds(
            task_members=("task_struct.start_time",))]),
        doc="a syscall slower than --slow-ms; source syscalls (the one source named in "
            "the plural: it times every syscall)",
    ),
    EventType(
        "net", "net",
        (Field("uid", "owner_uid", "int", "",
               "the real user id of the packet's process (its TCP connection's owner; "
               "0 with pid 0)"),
         Field("src", "saddr", "addr", "", "the source IP address (\"\": not IP)"),
         Field("dst", "daddr", "addr", "", "the destination IP address (\"\": not IP)"),
         Field("sport", "sport", "int", "", "the source port (TCP, UDP; else 0)"),
         Field("dport", "dport", "int", "", "the destination port (TCP, UDP; else 0)"),
         Field("proto", "proto", "proto", "",
               "the IP protocol (tcp, udp, icmp, icmp6, or a number)"),
         Field("len", "len", "int", "bytes", "the packet's length"),
         Field("ifindex", "ifindex", "int", "", "the network interface's index"),
         Field("dir", "dir", "direction", "", "ingress (received) or egress (sent)"),
         Field("captured", "captured", "int", "bytes",
               "how many of the packet's first bytes were captured (--pcap)")),
        Detail(None, ("dir", "proto", "src", "sport", "dst", "dport", "len")),
        panels=_TAIL, taskless=True, record=NET_RECORD,  # TC: no task, no task members
        doc="a packet seen by a TC program; source net. A TCP packet of a connection the "
            "tcp source follows has its owner's pid, tid, comm, cgroup and uid (docs/trace.md, "
            "\"Packets and their processes\"); any other: pid 0, comm [net]",
    ),
    EventType(
        "mark", "mark", (Field("text", "data", "str", "", "the marker's text"),),
        Detail(None, ("text",)),
        panels=frozenset({RECENT}),  # a clang-built program: no -D needs
        doc="a marker sent by 'ringtool mark' (any trace receives them)",
    ),
    EventType(
        "tcp", "tcp",
        (Field("family", "family", "int", "", "the IP version: 4 or 6"),
         Field("laddr", "saddr", "ip", "", "the local IP address"),
         Field("lport", "sport", "int", "", "the local port"),
         Field("raddr", "daddr", "ip", "", "the remote IP address"),
         Field("rport", "dport", "int", "", "the remote port"),
         Field("active", "active", "flag", "",
               "true when this end opened the connection (connect), false: accepted"),
         Field("tx_bytes", "tx_bytes", "int", "bytes", "bytes sent and acknowledged"),
         Field("rx_bytes", "rx_bytes", "int", "bytes", "bytes received"),
         Field("duration_us", "duration_ns", "latency_us", "us",
               "from the connection's first state change to its close, to 0.1 us"),
         Field("states", "states", "tcp_states", "", "the TCP states the connection went through"),
         Field("failed", "states", "tcp_failed", "", "true when it never was ESTABLISHED"),
         Field("error", "error", "int", "", "the socket's last error (an errno; 0: none)")),
        Detail(None, ("active", "laddr", "lport", "raddr", "rport", "tx_bytes", "rx_bytes",
                      "duration_us", "failed", "error")),
        panels=frozenset({RECENT, CONNECTIONS}),
        # the owner's header from the task; a socket's counters and error by address
        # sock_send_length/sock_recv_length (6.3 on): live bytes per process
        needs=KernelNeeds.union([TASK_HEADER, KernelNeeds(members=(
            BtfMember("tcp_sock.bytes_acked", 8, "TRACE_TCP_BYTES_ACKED_OFF"),
            BtfMember("tcp_sock.bytes_received", 8, "TRACE_TCP_BYTES_RECEIVED_OFF"),
            BtfMember("sock.sk_err", 4, "TRACE_SOCK_ERR_OFF"),
        ), optional=(  # live bytes per process; a passive connection's owner (6.3 on)
            OptionalTracepoints("sock", ("sock_send_length", "sock_recv_length"),
                                "TRACE_HAVE_SOCK_LENGTH"),
        ))]),
        record="trace_tcp",
        doc="a TCP connection, at its close; source tcp",
    ),
    EventType(
        "disk", "disk",
        (Field("dev", "dev", "blk_dev", "", "the block device as major:minor"),
         Field("disk", "dev", "blk_disk", "",
               "the block device's name from /sys/dev/block (empty where it has none)"),
         Field("op", "rwbs", "blk_op", "",
               "the operation: read, write, flush, discard, secure-erase, write-zeroes, ..."),
         Field("sync", "rwbs", "blk_sync", "", "true for a synchronous request (rwbs has S)"),
         Field("rwbs", "rwbs", "str", "", "the operation and flags as blktrace's letters"),
         Field("sector", "sector", "int", "",
               "the first sector, in 512-byte units from the start of the device"),
         Field("bytes", "bytes", "int", "bytes", "the request's size"),
         Field("queue_us", "queue_ns", "latency_us", "us",
               "from insertion into the I/O scheduler to issue to the device (0: not inserted)"),
         Field("service_us", "service_ns", "latency_us", "us",
               "from issue to completion: the device's time"),
         Field("error", "error", "int", "", "the completion's status: 0 or a negative errno")),
        Detail(None, ("disk", "dev", "op", "rwbs", "bytes", "sector", "service_us", "queue_us",
                      "error")),
        panels=frozenset({RECENT, DISKS}),
        # the issuer's header from the task; block_io_start (6.5 on): the submitter
        needs=KernelNeeds.union([TASK_HEADER, KernelNeeds(optional=(OptionalTracepoints(
            "block", ("block_io_start",), "TRACE_HAVE_BLOCK_IO_START"),))]),
        record="trace_disk",
        doc="a block I/O request, at its completion; source disk",
    ),
    EventType(
        "cpuwait", "cpuwait",
        (Field("wait_us", "value", "latency_us", "us",
               "how long the thread waited on a run queue for a CPU (over --slow-ms)"),
         Field("blocking", "aux", "flag", "",
               "true when the wait began as a preemption on the way to sleep")),
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
        doc="a thread's wait for a CPU of --slow-ms or more; source cpuwait (every wait "
        "is counted in its histograms)",
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
    "BY_NAME", "CONNECTIONS", "DISKS", "EVENT_RECORD", "EVENT_TYPES", "NEEDS", "NET_RECORD",
    "PANELS", "RECENT",
    "RECENT_TITLE", "SOURCE_OF", "TASK_HEADER", "TYPE_PREFIX", "Detail", "EventType", "Field",
    "types_in", "types_of",
]  # fmt: skip
