"""The ``net`` trace source: bpf/trace_net.c on an interface's TC clsact hooks.

:class:`NetSource` compiles the program, opens a :class:`ringtool.PerfBuffer` on its
PERF_EVENT_ARRAY, and attaches both directions to ``iface`` with pyroute2: it adds
the clsact qdisc when the interface has none, else shares it; on close it deletes only
its two filters (by their handle: another filter at our priority, which another
namespace's trace may have added while we ran, stays), then the clsact it added only
when no filter is left on it (another tool may have added some while the trace ran).
``close()`` always detaches, also after a failed setup; it is idempotent.
Its filters are named for this process (:mod:`ringtool.trace.reading.net_filters`): those a
killed ringtool left on the interface are replaced (and its clsact removed at close
when nothing else is on it), each with a note in :attr:`NetSource.notes`; a running
ringtool's, or a filter not ours at our priority, refuse the source with a message
naming it; other filters are left alone and named in a note.
With ``overwrite=True`` (a flight recorder) the perf buffers are opened with
``write_backward``: nothing is read while tracing and :meth:`NetSource.snapshot` copies
the newest samples.

Samples are ``struct trace_net`` + the first ``captured`` packet bytes (see
:class:`ringtool.event.records.NetRecords`).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from ringtool.errors import RingtoolError
from ringtool.kernel.proc_start import namespace_key, process_key
from ringtool.programs.loader import compile_program, load_function
from ringtool.readers.perfbuf import PerfBuffer
from ringtool.trace.reading.net_filters import (
    FILTER_HANDLE,
    FILTER_PRIO,
    classify,
    filter_name,
    read_filters,
)
from ringtool.trace.reading.net_order import NetReorder
from ringtool.trace.reading.sources import SOURCE_NAMED

TC_INGRESS = "ffff:fff2"  # clsact parents (TC_H_MIN_INGRESS / TC_H_MIN_EGRESS)
TC_EGRESS = "ffff:fff3"
HOOKS = {"ingress": TC_INGRESS, "egress": TC_EGRESS}


def _del_filter(ipr: Any, index: int, parent: str, handle: int) -> None:
    """Delete the one bpf filter ``handle`` at :data:`FILTER_PRIO` on hook ``parent``
    (never the priority's other filters: a handle of 0 would delete them all)."""
    assert handle
    ipr.tc("del-filter", "bpf", index, handle, parent=parent, prio=FILTER_PRIO)


class NetSourceError(RingtoolError):
    """The interface is missing or TC refused the program."""


class NetSource:
    """TC capture on ``iface`` into per-CPU perf buffers of ``pages`` pages;
    ``ts_offset``: where a sample's stamp is
    (:attr:`ringtool.event.layout.TraceLayout.net_ts_offset`)."""

    def __init__(
        self,
        iface: str,
        snaplen: int,
        pages: int,
        defines: dict[str, int | str],
        ts_offset: int,
        overwrite: bool = False,
    ) -> None:
        self.iface = iface
        self.overwrite = overwrite
        self._pending: list[tuple[int, bytes]] = []
        self._order = NetReorder(ts_offset)
        self._obj: Any = None
        self._pb: PerfBuffer | None = None
        self._index = 0
        self._own_qdisc = False
        self._filters: list[str] = []
        #: what the setup found on the interface (a killed ringtool's filters, others')
        self.notes: list[str] = []
        try:
            self._setup(snaplen, pages, defines)
        except BaseException as exc:
            self.close()
            if isinstance(exc, RingtoolError | KeyboardInterrupt):
                raise
            raise NetSourceError(f"cannot capture on {iface}: {exc}") from exc

    def _setup(self, snaplen: int, pages: int, defines: dict[str, int | str]) -> None:
        from pyroute2 import IPRoute

        with IPRoute() as ipr:
            found = ipr.link_lookup(ifname=self.iface)
        if not found:
            raise NetSourceError(f"no network interface {self.iface!r} (see `ip link`)")
        self._index = found[0]
        net = SOURCE_NAMED["net"]
        self._obj = compile_program(net.bpf_file, defines={**defines, "TRACE_SNAPLEN": snaplen},
                                    needs=net.needs)  # fmt: skip
        progs = {
            TC_INGRESS: load_function(self._obj, "trace_net_ingress", "SCHED_CLS"),
            TC_EGRESS: load_function(self._obj, "trace_net_egress", "SCHED_CLS"),
        }
        on_sample = None if self.overwrite else self._on_sample
        self._pb = PerfBuffer(
            self._obj[b"net_events"], on_sample, page_cnt=pages, overwrite=self.overwrite
        )
        me, ns = process_key(os.getpid()), namespace_key()
        with IPRoute() as ipr:
            self._take_hooks(ipr, me, ns)
            for parent, fn in progs.items():
                ipr.tc(
                    "add-filter", "bpf", self._index, FILTER_HANDLE, fd=fn.fd,
                    name=filter_name(fn.name.decode(), me, ns),
                    parent=parent, classid=1, direct_action=True, prio=FILTER_PRIO,
                )  # fmt: skip
                self._filters.append(parent)

    def _take_hooks(self, ipr: Any, me: str, ns: str) -> None:
        """The clsact qdisc (added, or shared), with a killed ringtool's filters
        removed (each by its handle); a conflict is a :class:`NetSourceError` (see the
        module doc). ``me``, ``ns``: this process's key and namespace key."""
        from pyroute2.netlink.exceptions import NetlinkError

        found = classify(read_filters(ipr, self._index, HOOKS), me, ns)
        if found.conflicts:
            what = "; ".join(dict.fromkeys(f.describe() for f in found.conflicts))
            raise NetSourceError(
                f"cannot capture on {self.iface}: TC priority {FILTER_PRIO} is taken ({what}): "
                f"another ringtool trace runs there (also one in a container sharing this "
                f"network namespace), or remove that filter "
                f"(tc filter del dev {self.iface} ingress|egress pref {FILTER_PRIO})"
            )
        try:
            ipr.tc("add", "clsact", self._index)
            self._own_qdisc = True
        except NetlinkError as exc:
            if exc.code != 17:  # EEXIST: someone's clsact is there; share it
                raise
        for f in found.leftovers:
            _del_filter(ipr, self._index, HOOKS[f.hook], f.handle)
        if found.leftovers:
            # its clsact too, at close, when nothing else is on it
            self._own_qdisc = True
            hooks = ", ".join(sorted({f.hook for f in found.leftovers}))
            self.notes.append(f"replaced a filter left by a killed ringtool on {self.iface} "
                              f"({hooks})")  # fmt: skip
        if found.foreign:
            what = "; ".join(dict.fromkeys(f.describe() for f in found.foreign))
            self.notes.append(f"{self.iface} has TC filters that are not ringtool's, left "
                              f"alone (one that runs first can drop what ringtool would see): "
                              f"{what}")  # fmt: skip

    def _on_sample(self, cpu: int, data: memoryview) -> None:
        self._pending.append((cpu, bytes(data)))

    def fileno(self) -> int:
        """Readable when a perf buffer has data."""
        assert self._pb is not None
        return self._pb.epoll_fd()

    def read(self, *, final: bool = False) -> list[tuple[int, bytes]]:
        """The samples available now, as ``(cpu, raw bytes)`` (consumed), in timestamp
        order across CPUs (:mod:`ringtool.trace.reading.net_order`: a sample can wait for a
        later read); ``final``: the last read, which releases every sample."""
        if self._pb is None:
            return []
        began = time.monotonic_ns()  # bpf_ktime_get_ns's clock, before any buffer is read
        self._pb.consume()
        out, self._pending = self._pending, []
        return self._order.flush(out) if final else self._order.add(began, out)

    def release_in(self) -> float | None:
        """Seconds until a read would release a sample held back for ordering (0: now;
        None: none is held): how long the reader may sleep without delaying it."""
        at = self._order.release_at()
        return None if at is None else max(0.0, (at - time.monotonic_ns()) / 1e9)

    def snapshot(self) -> dict[int, list[bytes]]:
        """``overwrite=True``: per CPU the samples its perf buffer holds now, oldest first
        (:meth:`ringtool.PerfBuffer.snapshot`; nothing is consumed)."""
        return {} if self._pb is None else self._pb.snapshot()

    def check_cpus(self) -> list[str]:
        """Follow CPU hotplug (:meth:`ringtool.PerfBuffer.check_cpus`); one line per change."""
        return [] if self._pb is None else self._pb.check_cpus()

    def prog_fds(self) -> dict[str, int]:
        """The loaded TC programs: function name -> program fd (open until close())."""
        obj = self._obj
        return {} if obj is None else {f.name.decode(): f.fd for f in obj.funcs.values()}

    def lost(self) -> dict[int, int]:
        """PERF_RECORD_LOST totals per CPU."""
        return {} if self._pb is None else self._pb.lost()

    def fill(self) -> dict[int, float]:
        """Per CPU: how full its perf buffer is now, 0..1."""
        if self._pb is None:
            return {}
        out: dict[int, float] = {}
        for buf in self._pb.buffers:
            ring = buf.ring
            used = ring.page.data_head - ring.page.data_tail
            out[ring.cpu] = min(1.0, used / ring.size)
        return out

    def close(self) -> None:
        """Detach from the interface, close the perf buffers, free the program."""
        from pyroute2 import IPRoute

        with contextlib.suppress(Exception), IPRoute() as ipr:
            for parent in self._filters:
                with contextlib.suppress(Exception):
                    _del_filter(ipr, self._index, parent, FILTER_HANDLE)
            # the clsact only when nothing is on it now: another tool may have added
            # filters while we ran (read at close, on both hooks)
            if self._own_qdisc and not read_filters(ipr, self._index, HOOKS):
                ipr.tc("del", "clsact", self._index)
        self._own_qdisc = False
        self._filters = []
        if self._pb is not None:
            with contextlib.suppress(Exception):
                self._pb.close()
            self._pb = None
        if self._obj is not None:
            with contextlib.suppress(Exception):
                self._obj.cleanup()
            self._obj = None


__all__ = ["NetSource", "NetSourceError"]
