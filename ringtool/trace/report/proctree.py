"""Which processes each process forked while the trace ran (the drill-down's children).

Fed from the fork records of each batch (vectorised: one mask per batch, forks are
rare beside opens and syscalls): a fork record's ``pid`` is the parent (tgid) and its
``aux`` the child's pid (bpf/trace_exec.c). Bounded: the newest ``PER_PARENT`` children
per parent and ``PARENTS`` parents (the oldest forgotten first), so a fork bomb costs
memory only up to the bounds. Counts (``forks``) stay exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PER_PARENT = 64
PARENTS = 4096


class ProcessTree:
    """Children seen per parent pid (see the module doc)."""

    def __init__(self, fork_type: int | None) -> None:
        self.fork_type = fork_type
        self._children: dict[int, dict[int, None]] = {}  # parent -> ordered set of pids
        self.forks: dict[int, int] = {}  # parent -> forks seen (not bounded by PER_PARENT)

    def add_batch(self, arr: np.ndarray[Any, Any]) -> None:
        """Record the fork records of a ``struct trace_event`` array."""
        if self.fork_type is None or len(arr) == 0:
            return
        forks = arr[arr["h"]["type"] == self.fork_type]
        if len(forks) == 0:
            return
        for parent, child in zip(forks["h"]["pid"].tolist(), forks["aux"].tolist(), strict=True):
            self.add(parent, child)

    def add(self, parent: int, child: int) -> None:
        kids = self._children.pop(parent, None)  # re-inserted: the newest parent last
        if kids is None:
            kids = {}
            if len(self._children) >= PARENTS:
                del self._children[next(iter(self._children))]
        kids[child] = None
        if len(kids) > PER_PARENT:
            del kids[next(iter(kids))]
        self._children[parent] = kids
        self.forks[parent] = self.forks.get(parent, 0) + 1
        if len(self.forks) > 4 * PARENTS:  # counts of long-gone parents go first
            del self.forks[next(iter(self.forks))]

    def parents(self) -> dict[int, int]:
        """Child pid -> the parent that forked it, of the children remembered (a pid
        forked twice, after reuse: its newest parent)."""
        return {kid: parent for parent, kids in self._children.items() for kid in kids}

    def children(self, parent: int) -> list[int]:
        """The newest children of ``parent`` seen (oldest first), at most PER_PARENT."""
        return list(self._children.get(parent, ()))


__all__ = ["PARENTS", "PER_PARENT", "ProcessTree"]
