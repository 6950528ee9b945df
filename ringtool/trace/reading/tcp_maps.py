"""Reading the tcp source's maps (bpf/trace_tcp.c): each process's live byte counters
(``proc_io``, read once per interval) and the connections it follows (``conns``, read
only while the dashboard's drill-down is open), with BPF_MAP_LOOKUP_BATCH
(:func:`ringtool.kernel.bpf.map_lookup_batch_raw`).

``proc_io`` counts where the kernel has the ``sock:sock_send_length`` and
``sock:sock_recv_length`` tracepoints (6.3 on); elsewhere the program has no such
map and :func:`read_proc_io` says None. A ``conns`` entry is a connection not closed
yet, with its owner once known (an active one's from its connect, a passive one's
from its first send or receive call where the kernel has those tracepoints, else from
its close or shutdown), its newest state, remote address and ports, and its bytes
through send and receive calls (0 without those tracepoints).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from ringtool.event.layout import TraceLayout
from ringtool.kernel import bpf
from ringtool.programs.loaded import LoadedProgram
from ringtool.trace.reading.tcp_conns import open_conns

#: ``struct tcp_io``: a process's bytes sent and received
IO_DTYPE = np.dtype([("tx_bytes", "<u8"), ("rx_bytes", "<u8")])
#: Entries asked for per batch call.
CHUNK = 1024


def _has(obj: Any, name: bytes) -> bool:
    try:
        obj[name]
    except KeyError:
        return False
    return True


def read_proc_io(obj: Any) -> dict[int, tuple[int, int]] | None:
    """Each process's ``(sent, received)`` bytes through TCP send/receive calls since
    the trace started (``obj``: the tcp source's loaded program); None where the
    kernel has no such tracepoints (the program has no ``proc_io``)."""
    if not _has(obj, b"proc_io"):
        return None
    keys, values = bpf.map_lookup_batch_raw(obj[b"proc_io"].map_fd, 4, IO_DTYPE.itemsize, CHUNK)
    pids = np.frombuffer(keys, "<u4").tolist()
    io = np.frombuffer(values, IO_DTYPE)
    return dict(zip(pids, zip(io["tx_bytes"].tolist(), io["rx_bytes"].tolist(), strict=True),
                    strict=True))  # fmt: skip


def read_conns(
    obj: LoadedProgram, layout: TraceLayout, pids: Collection[int]
) -> np.ndarray[Any, Any]:
    """The open connections (``conns`` entries: ``struct trace_tcp_conn`` rows of
    ``layout``, read by :func:`ringtool.trace.reading.tcp_conns.open_conns`) owned by
    processes ``pids``, the oldest first."""
    conns = open_conns(obj, layout).conns
    mine = conns[(conns["owned"] == 1) & np.isin(conns["pid"], list(pids))]
    oldest_first: np.ndarray[Any, Any] = mine[np.argsort(mine["start_ns"], kind="stable")]
    return oldest_first


__all__ = ["IO_DTYPE", "read_conns", "read_proc_io"]
