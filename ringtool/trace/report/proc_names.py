"""The current name of each process in a batch of records, and the label of packets.

A process's name changes when it execs (``sched_process_exec`` records already carry
the new comm, bpf/trace_exec.c), so the name to show is that of its *newest* record:
:func:`latest_names` finds, per pid, the record with the largest ``h.ts`` (the
monotonic clock of ``bpf_ktime_get_ns``, comparable across CPUs) with one
``np.lexsort`` per batch; :class:`~ringtool.trace.report.stats.TraceStats` keeps the name
whose timestamp is the newest across batches, so a batch read late from another CPU
cannot bring an old name back.

Packets are captured by TC programs, which run without a task (softirq or a queue's
transmit): their records have pid 0 and no comm. They are counted and shown under
:data:`NET_LABEL`, never as a nameless process.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ringtool.event.fields import NET_LABEL  # a packet's comm in every output


class BatchNames(NamedTuple):
    """Per distinct pid of a batch (ascending): its record count, and the comm field
    (raw 16 bytes) and ``h.ts`` of its newest record."""

    pids: list[int]
    counts: list[int]
    comms: list[bytes]
    ts: list[int]


def latest_names(h: np.ndarray[Any, Any]) -> BatchNames:
    """:class:`BatchNames` of the record headers ``h`` (fields ``pid``, ``ts``, ``comm``;
    vectorised: one sort per batch)."""
    if len(h) == 0:
        return BatchNames([], [], [], [])
    pid = h["pid"]
    if (pid == pid[0]).all():  # one process (the common case): no sort
        ts = h["ts"]
        newest_one = len(ts) - 1 - int(np.argmax(ts[::-1]))  # the last of the newest, as below
        return BatchNames([int(pid[0])], [len(ts)], [h["comm"][newest_one].tolist()],
                          [int(ts[newest_one])])  # fmt: skip
    order = np.lexsort((h["ts"], pid))  # by pid, then by time: each pid's newest last
    sorted_pid = pid[order]
    ends = np.flatnonzero(np.append(sorted_pid[1:] != sorted_pid[:-1], True))
    counts: list[int] = np.diff(ends, prepend=-1).tolist()
    newest = order[ends]
    return BatchNames(
        sorted_pid[ends].tolist(), counts, h["comm"][newest].tolist(), h["ts"][newest].tolist()
    )


def shown_comm(comm: str, event_type: str) -> str:
    """The name to show for an event: :data:`NET_LABEL` for a packet without a task,
    else ``comm``."""
    return NET_LABEL if event_type == "net" and not comm else comm


__all__ = ["NET_LABEL", "BatchNames", "latest_names", "shown_comm"]
