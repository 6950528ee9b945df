"""The trace's end of ``ringtool mark``: a user ring that markers write into, drained
into the trace's own rings by ``bpf/trace_mark.bpf.c``.

Where a running trace is found: ``/sys/fs/bpf/ringtool/<pid>-<start>-<id>/``
(``<start>``: the process's start time, field 22 of ``/proc/<pid>/stat``, so a reused
pid is not taken for the trace; ``<id>``: random, one per session, as a process may run
several), mode 0700, holding two pins:

* ``marks``: the BPF_MAP_TYPE_USER_RINGBUF (:data:`MARK_RING_BYTES`);
* ``drain``: the raw tracepoint program that drains it into the trace's per-CPU
  group, looked up through the group's outer map like every trace source
  (``bpf/percpu_ringbuf.h``).

What triggers the drain: the marker itself, with ``BPF_PROG_TEST_RUN`` of ``drain``
right after it wrote (:mod:`ringtool.trace.mark_send`). Nothing is attached, so no
traced process pays anything, the drain runs once per mark, and the marker's record
gets ``bpf_ktime_get_ns()`` of that moment and the marker's pid and comm; a tracepoint
that ``mark`` would then hit would run the program on every other caller too.

Which programs may drain: ``bpf_user_ringbuf_drain`` is in ``bpf_base_func_proto``
(kernel/bpf/helpers.c, for ``bpf_capable()`` callers) since Linux 6.1, so every program
type whose helpers fall back to it -- tracepoints, kprobes, raw tracepoints, perf
events, TC, XDP -- may call it; a raw tracepoint program is the one type that
``BPF_PROG_TEST_RUN`` runs with the caller's task as ``current`` and no context.

A trace removes its directory at exit (:meth:`MarkSource.close`); one killed leaves it
behind, holding its maps: every trace start and every ``mark`` removes the directories
whose process is gone (:func:`remove_stale`).

The root is opened and checked as :mod:`ringtool.kernel.pin_root` says (a directory
only root can change, used through its descriptor): on a bpffs of mode 1777 another
user could otherwise plant ``/sys/fs/bpf/ringtool`` as a link to a directory that root
would then empty, or as a directory of theirs holding locked entries.
"""

from __future__ import annotations

import os
import secrets

from ringtool.errors import KernelFeatureError
from ringtool.event.layout import TraceLayout
from ringtool.kernel import bpf
from ringtool.kernel.pin_root import (
    PIN_ROOT,
    entries,
    fd_path,
    open_dir_at,
    open_pin_root,
    remove_at,
)
from ringtool.kernel.proc_start import is_running, process_key
from ringtool.kernel.ringbuf_map import has_user_ringbuf
from ringtool.programs.clang_loader import load_pinned
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.trace.sources import SOURCE_NAMED

#: The marker ring: 16 pages, room for 240 markers the trace has not drained.
MARK_RING_BYTES = 16 * 4096
_GROUP_PINS = ("rt_rings", "rt_cpumap", "rt_drops")


def is_live(name: str) -> bool:
    """Is the trace that made directory ``name`` still running?"""
    pid, _, rest = name.partition("-")
    return is_running(f"{pid}-{rest.partition('-')[0]}")


def remove_stale_at(root_fd: int) -> list[str]:
    """Remove the directories of traces that are gone from the pin root opened as
    ``root_fd`` (:func:`~ringtool.kernel.pin_root.open_pin_root`); returns their names."""
    stale = [n for n in entries(root_fd) if not is_live(n)]
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

    ``group`` is the trace's ring group; ``layout`` gives the record size checks.
    Raises :class:`KernelFeatureError` on a kernel without USER_RINGBUF,
    :class:`~ringtool.errors.UnsafeDirectoryError` when ``root`` is not safe to use, a
    :class:`~ringtool.programs.loader.BpfCompileError` when clang/bpftool fail."""

    def __init__(self, group: RingBufGroup, layout: TraceLayout, root: str = PIN_ROOT) -> None:
        check_user_ringbuf()
        root_fd = open_pin_root(root, create=True)
        assert root_fd is not None  # created
        self._root_fd = root_fd
        self._dir_fd = -1
        self._name = f"{process_key(os.getpid())}-{secrets.token_hex(4)}"
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

            # every map is ours, passed to libbpf by its pin: the group's three (pins
            # removed once the program holds them) and the marker ring
            marks_fd = bpf.map_create(bpf.MapType.USER_RINGBUF, key_size=0, value_size=0,
                                      max_entries=MARK_RING_BYTES)  # fmt: skip
            bpf.obj_pin(marks_fd, pin("marks"))
            fds = (group.rings_fd, group.cpumap_fd, group.drops_fd)
            for name, fd in zip(_GROUP_PINS, fds, strict=True):
                bpf.obj_pin(fd, pin(name))
            defines: dict[str, int | str] = {
                **layout.size_defines(),
                "MARK_RING_BYTES": MARK_RING_BYTES,
                "RT_PCPU_OUTER_ENTRIES": bpf.map_info(group.rings_fd).max_entries,
                "RT_PCPU_NCPU": bpf.map_info(group.cpumap_fd).max_entries,
                "RT_PCPU_NR_BUFS": group.layout.buffers,
                "RT_PCPU_CPUS_PER_BUF": group.layout.cpus_per_buffer,
            }
            load_pinned(
                SOURCE_NAMED["mark"].bpf_file, fd_path(dir_fd), defines=defines,
                prog_name="drain", reuse={n: pin(n) for n in (*_GROUP_PINS, "marks")},
                pin_maps=False, pass_fds=(dir_fd,),
            )  # fmt: skip
            for name in _GROUP_PINS:
                os.unlink(name, dir_fd=dir_fd)
        except BaseException:
            self.close()
            raise
        finally:
            if marks_fd >= 0:
                bpf.close_fd(marks_fd)  # the pin holds it

    def close(self) -> None:
        """Remove the pins (the trace ends: markers find it no more). Idempotent."""
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1
        if self._root_fd >= 0:
            remove_at(self._root_fd, self._name)
            os.close(self._root_fd)
            self._root_fd = -1


__all__ = [
    "MARK_RING_BYTES",
    "PIN_ROOT",
    "MarkSource",
    "check_user_ringbuf",
    "remove_stale",
    "remove_stale_at",
]
