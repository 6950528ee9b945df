"""The pipes between ``trace --export`` and its publisher process, and their counts.

Both directions carry *frames*: a 4-byte little-endian length, then a pickle (the two
ends are one ringtool, started by the same Python; nothing else writes these pipes).
A frame is a tuple whose first item names it:

parent -> child (the child's stdin)
    ``("init", cfg, origin, layout, named, batch_events)`` first; then
    ``("batch", Batch)`` (a lane batch: its ``struct trace_event`` rows are the
    pickle's bytes), ``("stats", record, n)`` (a ``stats/1`` message to publish) and
    last ``("close", record, parent_snapshot)`` (drain, publish the summary).
child -> parent (the child's stdout)
    ``("first", error | None)`` once the first connection attempt ended,
    ``("note", line)``, ``("snap", counters)`` a few times a second, and
    ``("final", counters)`` after the close.

:func:`merge` adds the parent's own counters (``queue_full`` of its bounded buffer,
``publisher_died``) to the child's snapshot: together they are what
:meth:`ringtool.export.accounting.ExportCounters.snapshot` gives in one process.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Mapping
from typing import Any

_LEN = struct.Struct("<I")
#: ``F_SETPIPE_SZ`` (fcntl(2)): the pipe to the child holds this much while it is busy.
F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20


def frame(obj: tuple[Any, ...]) -> bytes:
    """``obj`` as one frame (see module doc)."""
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the blocking ``fd`` (BrokenPipeError when the reader is gone)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int) -> bytes | None:
    parts: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def read_frame(fd: int) -> tuple[Any, ...] | None:
    """The next frame from ``fd``; None at the end of the pipe (the writer closed or
    died, also in the middle of a frame)."""
    head = _read_exact(fd, _LEN.size)
    if head is None:
        return None
    body = _read_exact(fd, _LEN.unpack(head)[0])
    if body is None:
        return None
    obj = pickle.loads(body)
    assert isinstance(obj, tuple)
    return obj


def add_lists(a: list[int], b: list[int]) -> list[int]:
    """Element-wise sum of two per-CPU lists (the shorter one padded with zeros)."""
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


def merge(parent: Mapping[str, Any], child: Mapping[str, Any] | None,
          handed: int) -> dict[str, Any]:  # fmt: skip
    """The export counters of the whole exporter: ``parent``'s drops (its snapshot)
    plus ``child``'s (its last snapshot, or None before the first); ``handed``: every
    event the trace gave the exporter (``export_pending`` is what is neither acked
    nor dropped yet)."""
    c = dict(child) if child is not None else {}
    reasons = dict(parent["export_dropped_by_reason"])
    for k, v in c.get("export_dropped_by_reason", {}).items():
        reasons[k] = reasons.get(k, 0) + v
    exported = int(c.get("exported", 0))
    dropped = int(parent["export_dropped"]) + int(c.get("export_dropped", 0))
    return {
        "exported": exported,
        "export_dropped": dropped,
        "export_dropped_by_reason": reasons,
        "exported_per_cpu": list(c.get("exported_per_cpu", [0] * len(parent["exported_per_cpu"]))),
        "export_dropped_per_cpu": add_lists(
            list(parent["export_dropped_per_cpu"]), list(c.get("export_dropped_per_cpu", []))
        ),
        "export_pending": handed - exported - dropped,
        "export_messages": int(c.get("export_messages", 0)),
        "export_bytes": int(c.get("export_bytes", 0)),
        "export_resends": int(c.get("export_resends", 0)),
        "export_duplicates": int(c.get("export_duplicates", 0)),
    }


__all__ = ["F_SETPIPE_SZ", "PIPE_BYTES", "add_lists", "frame", "merge", "read_frame", "write_all"]
