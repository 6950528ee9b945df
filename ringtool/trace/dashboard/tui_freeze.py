"""What a paused dashboard draws: a copy of the stats that the reading loop, which
goes on counting, does not change.

:func:`frozen_stats` copies a :class:`~ringtool.trace.report.stats.TraceStats` and every
container of it that :meth:`~ringtool.trace.report.stats.TraceStats.add_batch` or
:meth:`~ringtool.trace.report.stats.TraceStats.tick` changes in place (the process rows,
the per-CPU and per-type counts, the histories, the drop log, the fork tree); the
containers ``tick`` replaces whole are shared. Once per pause, not per event.
"""

from __future__ import annotations

import copy
from collections import deque

from ringtool.trace.report.stats import TraceStats


def frozen_stats(stats: TraceStats) -> TraceStats:
    """A copy of ``stats`` that later batches and ticks leave as it is."""
    s = copy.copy(stats)
    s.procs = {pid: list(row) for pid, row in stats.procs.items()}
    s.per_cpu = list(stats.per_cpu)
    s.by_type = dict(stats.by_type)
    s.history = deque(stats.history, maxlen=stats.history.maxlen)
    s.history_cpu = [deque(h, maxlen=h.maxlen) for h in stats.history_cpu]
    s.drop_log = deque(stats.drop_log, maxlen=stats.drop_log.maxlen)
    s.tree = copy.deepcopy(stats.tree)
    return s


__all__ = ["frozen_stats"]
