"""The trace's end of ``ringtool mark``: a user ring that markers write into, drained
into the trace's own rings by ``bpf/trace_mark.bpf.c``.

Where a running trace is found: ``/sys/fs/bpf/ringtool/<pid>-<start>-<ns>-<id>/``
(``<start>``: the process's start time, field 22 of ``/proc/<pid>/stat``, so a reused
pid is not taken for the trace; ``<ns>``: the namespaces that pid and start time are
relative to (:func:`namespace_key`); ``<id>``: random, one per session, as a process
may run several), mode 0700, holding two pins:

* ``marks``: the BPF_MAP_TYPE_USER_RINGBUF (:data:`MARK_RING_BYTES`);
* ``drain``: the raw tracepoint program that drains it into the trace's per-CPU
  group, looked up through the group's outer map like every trace source
  (``bpf/percpu_ringbuf.h``).

What triggers the drain: the marker itself, with ``BPF_PROG_TEST_RUN`` of ``drain``
right after it wrote (:mod:`ringtool.trace.reading.mark_send`). Nothing is attached, so no
traced process pays anything, the drain runs once per mark, and the marker's record
gets ``bpf_ktime_get_ns()`` of that moment and the marker's pid and comm; a tracepoint
that ``mark`` would then hit would run the program on every other caller too.

Which programs may drain: ``bpf_user_ringbuf_drain`` is in ``bpf_base_func_proto``
(kernel/bpf/helpers.c, for ``bpf_capable()`` callers) since Linux 6.1, so every program
type whose helpers fall back to it -- tracepoints, kprobes, raw tracepoints, perf
events, TC, XDP -- may call it; a raw tracepoint program is the one type that
``BPF_PROG_TEST_RUN`` runs with the caller's task as ``current`` and no context.

A trace stops taking markers before its last read (:meth:`MarkSource.close`: under the
directory's lock, it closes ``drain``'s gate, a one-entry array the drain checks first,
and removes the directory), so a marker confirmed is one the trace reads. One killed leaves it
behind, holding its maps: every trace start and every ``mark`` removes the directories
whose process is gone (:func:`remove_stale`) -- only those of its own namespaces. A
container that shares the host's bpffs sees the host's traces' directories but not
their processes (its ``/proc`` is of another PID namespace, and a time namespace shifts
start times): it can tell neither whether they run nor mark them, so it leaves them
alone. A directory of another namespace whose trace was killed is removed once no process
is left in its PID namespace, by a trace or ``mark`` of the initial PID namespace (which
sees every process: :func:`ringtool.kernel.proc_start.liveness`); until then it stays
(its maps' memory); ``sudo rm -r`` removes it.

The root is opened and checked as :mod:`ringtool.kernel.pin_root` says (a directory
only root can change, used through its descriptor): on a bpffs of mode 1777 another
user could otherwise plant ``/sys/fs/bpf/ringtool`` as a link to a directory that root
would then empty, or as a directory of theirs holding locked entries.
"""

from __future__ import annotations

import errno
import os
import secrets
import struct

from ringtool.errors import KernelFeatureError
from ringtool.event.layout import TraceLayout
from ringtool.kernel import bpf
from ringtool.kernel.pin_root import (
    PIN_ROOT,
    entries,
    fd_path,
    lock_at,
    open_dir_at,
    open_pin_root,
    remove_at,
)
from ringtool.kernel.proc_start import liveness as process_liveness
from ringtool.kernel.proc_start import namespace_key, process_key
from ringtool.kernel.ringbuf_map import has_user_ringbuf
from ringtool.programs.cache_store import ProgramStore
from ringtool.programs.clang_loader import load_in_process, load_pinned
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.trace.reading.sources import SOURCE_NAMED

#: The marker ring: 16 pages, room for 240 markers the trace has not drained.
MARK_RING_BYTES = 16 * 4096
#: What ``drain`` returns (negated) once the trace closed its gate: the trace ended.
MARK_ENDED = errno.ESHUTDOWN
_GROUP_PINS = ("rt_rings", "rt_cpumap", "rt_drops")
_GATE = "mark_gate"
_GATE_KEY = struct.pack("=I", 0)


def entry_name(pid: int, ns: str, session: str) -> str:
    """The name of the marker directory of trace ``session`` of process ``pid``, made
    in the namespaces ``ns`` (:func:`namespace_key`)."""
    return f"{process_key(pid)}-{ns}-{session}"


def liveness(name: str, ns: str) -> bool | None:
    """Is the trace that made directory ``name`` still running, asked in the namespaces
    ``ns`` (:func:`namespace_key`)? None when that cannot be told here: a directory of
    other namespaces whose trace may run (:func:`ringtool.kernel.proc_start.liveness`),
    or a name ringtool does not make."""
    parts = name.split("-")
    if len(parts) != 4:
        return None
    return process_liveness(f"{parts[0]}-{parts[1]}", parts[2], ns)


def is_live(name: str) -> bool:
    """Is directory ``name`` that of a running trace of our namespaces?"""
    return liveness(name, namespace_key()) is True


def remove_stale_at(root_fd: int) -> list[str]:
    """Remove the directories of traces of our namespaces that are gone from the pin
    root opened as ``root_fd`` (:func:`~ringtool.kernel.pin_root.open_pin_root`);
    returns their names. Nothing whose trace may run is removed (:func:`liveness`)."""
    ns = namespace_key()
    stale = [n for n in entries(root_fd) if liveness(n, ns) is False]
    for n in stale:
        remove_at(root_fd, n)
    return stale


def remove_stale(root: str = PIN_ROOT) -> list[str]:
    """:func:`remove_stale_at` of the pin root ``root`` (nothing when it is missing);
    :class:`~ringtool.errors.UnsafeDirectoryError` when it is not safe to use."""
    root_fd = open_pin_root(root, create=False)
    if root_fd is None:
        return []
    try:
        return remove_stale_at(root_fd)
    finally:
        os.close(root_fd)


def check_user_ringbuf() -> None:
    """:class:`KernelFeatureError` when this kernel has no BPF_MAP_TYPE_USER_RINGBUF."""
    if not has_user_ringbuf():
        raise KernelFeatureError(
            f"this kernel ({os.uname().release}) has no BPF_MAP_TYPE_USER_RINGBUF "
            "(Linux 6.1 or later): markers need it"
        )


class MarkSource:
    """The marker ring of one trace, pinned for ``ringtool mark`` (see the module doc).

    ``group`` is the trace's ring group; ``layout`` gives the record size checks;
    ``store``: the program cache, which keeps clang's object of the drain. Raises
    :class:`KernelFeatureError` on a kernel without USER_RINGBUF,
    :class:`~ringtool.errors.UnsafeDirectoryError` when ``root`` is not safe to use, a
    :class:`~ringtool.programs.loader.BpfCompileError` when clang/bpftool fail."""

    def __init__(
        self,
        group: RingBufGroup,
        layout: TraceLayout,
        root: str = PIN_ROOT,
        store: ProgramStore | None = None,
    ) -> None:
        check_user_ringbuf()
        root_fd = open_pin_root(root, create=True)
        assert root_fd is not None  # created
        self._root_fd = root_fd
        self._dir_fd = -1
        self._gate_fd = -1
        self._name = entry_name(os.getpid(), namespace_key(), secrets.token_hex(4))
        self.path = os.path.join(root, self._name)
        marks_fd = -1
        try:
            remove_stale_at(root_fd)
            os.mkdir(self._name, 0o700, dir_fd=root_fd)
            dir_fd = open_dir_at(root_fd, self._name)
            if dir_fd is None:
                raise FileNotFoundError(f"{self.path} vanished as it was made")
            self._dir_fd = dir_fd

            def pin(name: str) -> str:
                return fd_path(dir_fd, name)

            # every map is ours: given to libbpf in this process by fd, or to bpftool by
            # its pin (the group's three and the gate: pins removed once the program
            # holds them) and the marker ring
            marks_fd = bpf.map_create(bpf.MapType.USER_RINGBUF, key_size=0, value_size=0,
                                      max_entries=MARK_RING_BYTES)  # fmt: skip
            bpf.obj_pin(marks_fd, pin("marks"))
            self._gate_fd = bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=4,
                                           max_entries=1)  # fmt: skip
            fds = (group.rings_fd, group.cpumap_fd, group.drops_fd, self._gate_fd)
            defines: dict[str, int | str] = {
                **layout.size_defines(),
                "MARK_RING_BYTES": MARK_RING_BYTES,
                "MARK_ENDED": MARK_ENDED,
                "RT_PCPU_OUTER_ENTRIES": bpf.map_info(group.rings_fd).max_entries,
                "RT_PCPU_NCPU": bpf.map_info(group.cpumap_fd).max_entries,
                "RT_PCPU_NR_BUFS": group.layout.buffers,
                "RT_PCPU_CPUS_PER_BUF": group.layout.cpus_per_buffer,
            }
            source = SOURCE_NAMED["mark"].bpf_file
            maps = {**dict(zip((*_GROUP_PINS, _GATE), fds, strict=True)), "marks": marks_fd}
            drain_fd = load_in_process(source, defines=defines, maps=maps, store=store)
            if drain_fd is not None:
                try:
                    bpf.obj_pin(drain_fd, pin("drain"))
                finally:
                    bpf.close_fd(drain_fd)  # the pin holds it
            else:  # no libbpf here, or it refused: bpftool loads it, or says why not
                for name, fd in zip((*_GROUP_PINS, _GATE), fds, strict=True):
                    bpf.obj_pin(fd, pin(name))
                load_pinned(
                    source, fd_path(dir_fd), defines=defines, prog_name="drain",
                    reuse={n: pin(n) for n in (*_GROUP_PINS, _GATE, "marks")},
                    pin_maps=False, pass_fds=(dir_fd,), store=store,
                )  # fmt: skip
                for name in (*_GROUP_PINS, _GATE):
                    os.unlink(name, dir_fd=dir_fd)
        except BaseException:
            self.close()
            raise
        finally:
            if marks_fd >= 0:
                bpf.close_fd(marks_fd)  # the pin holds it

    def close(self) -> None:
        """Take no marker from here on; call it before the trace's last read (and again
        at the end: idempotent). Under the directory's lock -- the one every ``mark``
        holds from finding the pins to its drain's end (:mod:`ringtool.trace.reading.mark_send`)
        -- it closes the drain's gate (``drain`` then refuses: -:data:`MARK_ENDED`) and
        removes the pins. So a marker confirmed was in the trace's ring before this
        returned, and a ``mark`` after it finds no pins or a closed gate, and says so.
        A ``mark`` stopped while holding the lock costs at most
        :data:`~ringtool.kernel.pin_root.LOCK_WAIT_S`: the gate is closed anyway (one
        that resumes right then, racing the gate's update, is the one case left)."""
        if self._dir_fd >= 0:
            lock_at(self._dir_fd)
        if self._gate_fd >= 0:
            bpf.map_update(self._gate_fd, _GATE_KEY, struct.pack("=I", 1))
            bpf.close_fd(self._gate_fd)
            self._gate_fd = -1
        if self._root_fd >= 0:
            remove_at(self._root_fd, self._name)
            os.close(self._root_fd)
            self._root_fd = -1
        if self._dir_fd >= 0:
            os.close(self._dir_fd)  # drops the lock
            self._dir_fd = -1


__all__ = [
    "MARK_ENDED",
    "MARK_RING_BYTES",
    "PIN_ROOT",
    "MarkSource",
    "check_user_ringbuf",
    "entry_name",
    "is_live",
    "liveness",
    "namespace_key",
    "remove_stale",
    "remove_stale_at",
]
