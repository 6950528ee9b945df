"""Reading the tcp source's open connections: its ``conns`` hash (bpf/trace_tcp.c), one
``struct trace_tcp_conn`` (bpf/trace_event.h) per connection it follows, from its first
state until its close.

What the kernel keeps of an open connection is its owner (once known: ``owned``), when
it began, the states it went through and its addresses and ports at its latest state
change; not its bytes, which the source reads from the socket at the close only. The
whole hash is read with ``BPF_MAP_LOOKUP_BATCH`` (a few syscalls for thousands of
entries), or entry by entry through BCC where the kernel has no batch operations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ringtool.errors import BpfSyscallError
from ringtool.event.layout import LayoutError, TraceLayout
from ringtool.kernel import bpf
from ringtool.programs.loaded import LoadedProgram

#: The struct of the hash's values (bpf/trace_event.h).
CONN_STRUCT = "trace_tcp_conn"


@dataclass(frozen=True)
class OpenConns:
    """The open connections (``struct trace_tcp_conn`` rows) read at ``now_ns``
    (CLOCK_MONOTONIC, the clock of their ``start_ns``)."""

    conns: np.ndarray[Any, Any]
    now_ns: int


def open_conns(obj: LoadedProgram, layout: TraceLayout) -> OpenConns:
    """The connections in the tcp source's ``conns`` hash now (``obj``: its program)."""
    dtype = layout.dtypes[CONN_STRUCT]
    table = obj[b"conns"]
    fd = table.map_fd
    size = bpf.map_info(fd).value_size
    if size != dtype.itemsize:
        raise LayoutError(f"the tcp source's conns values are {size} bytes, struct "
                          f"{CONN_STRUCT} {dtype.itemsize}: bpf/trace_event.h and "
                          "bpf/trace_tcp.c disagree")  # fmt: skip
    now = time.monotonic_ns()
    try:
        _, raw = bpf.map_lookup_batch_raw(fd, 8, size)
    except BpfSyscallError:  # no batch operations (kernel < 5.6)
        raw = b"".join(bytes(memoryview(v)) for _, v in table.items())
    return OpenConns(np.frombuffer(raw, dtype=dtype), now)


__all__ = ["CONN_STRUCT", "OpenConns", "open_conns"]
