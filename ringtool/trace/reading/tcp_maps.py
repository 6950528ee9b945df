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

from ringtool.kernel import bpf

#: ``struct tcp_conn`` of bpf/trace_tcp.c
CONN_DTYPE = np.dtype([
    ("start_ns", "<u8"), ("cgroup", "<u8"), ("comm", "S16"), ("pid", "<u4"), ("tid", "<u4"),
    ("uid", "<u4"), ("gid", "<u4"), ("states", "<u2"), ("active", "u1"), ("owned", "u1"),
    ("sport", "<u2"), ("dport", "<u2"), ("daddr", "u1", (16,)), ("tx_bytes", "<u8"),
    ("rx_bytes", "<u8"), ("state", "u1"), ("pad", "u1", (7,)),
])  # fmt: skip
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


def read_conns(obj: Any, pids: Collection[int]) -> np.ndarray[Any, Any]:
    """The open connections (``conns`` entries, :data:`CONN_DTYPE`) owned by processes
    ``pids``, the oldest first."""
    _, values = bpf.map_lookup_batch_raw(obj[b"conns"].map_fd, 8, CONN_DTYPE.itemsize, CHUNK)
    conns = np.frombuffer(values, CONN_DTYPE)
    mine = conns[(conns["owned"] == 1) & np.isin(conns["pid"], list(pids))]
    oldest_first: np.ndarray[Any, Any] = mine[np.argsort(mine["start_ns"], kind="stable")]
    return oldest_first


__all__ = ["CONN_DTYPE", "IO_DTYPE", "read_conns", "read_proc_io"]
