"""The dashboard's process table as a tree (htop's F5): each process under the one
that forked it, from the fork records (:class:`ringtool.trace.report.proctree.ProcessTree`),
and for a process started before the trace (no fork record), from ``/proc`` as htop
does (:class:`ProcParents`).

:func:`tree_rows` orders rows depth first: a row whose parent is not among the rows
is a root; siblings keep the order they were given in (the sort chosen), and a child's
comm is indented under its parent (``└─``, two columns per level up to
:data:`MAX_DEPTH`). Only the rows given are placed: a filter or an exited parent
makes its children roots. A cycle (pids reused) cannot loop: each row is placed once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ringtool.trace.reading.parents import parent_of

#: Levels indented at most (deeper ones are drawn at this depth: the comm keeps room).
MAX_DEPTH = 8
#: Parents read from /proc remembered at most (the oldest forgotten first).
PROC_PARENTS = 8192

Row = tuple[int, str, int, int]  # pid, comm, events, events in the last interval


class ProcParents:
    """The parents of processes without a fork record, read from ``proc`` once per pid
    (a process's parent read when it is first drawn; one reparented later keeps it)
    and remembered (at most :data:`PROC_PARENTS`). A gone process has none."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        self._known: dict[int, int | None] = {}

    def parents(self, pids: Iterable[int], forked: Mapping[int, int]) -> dict[int, int]:
        """``forked`` (child -> parent from the fork records) with the parents of the
        other ``pids`` from ``/proc`` added."""
        out = dict(forked)
        for pid in pids:
            if pid in out or pid <= 0:
                continue
            if pid not in self._known:
                if len(self._known) >= PROC_PARENTS:
                    del self._known[next(iter(self._known))]
                self._known[pid] = parent_of(pid, self.proc)
            parent = self._known[pid]
            if parent is not None:
                out[pid] = parent
        return out


def tree_rows(rows: list[Row], parent_of: Mapping[int, int]) -> list[Row]:
    """``rows`` (in their sort order) as a tree, children under their parent, with
    the comm indented by depth (see the module doc)."""
    shown = {r[0] for r in rows}
    kids: dict[int, list[Row]] = {}
    roots: list[Row] = []
    for r in rows:
        parent = parent_of.get(r[0])
        if parent is not None and parent in shown and parent != r[0]:
            kids.setdefault(parent, []).append(r)
        else:
            roots.append(r)
    out: list[Row] = []
    placed: set[int] = set()
    stack: list[tuple[Row, int]] = [(r, 0) for r in reversed(roots)]
    while stack:
        row, depth = stack.pop()
        if row[0] in placed:
            continue
        placed.add(row[0])
        indent = "  " * (min(depth, MAX_DEPTH) - 1) + "└─" if depth else ""
        out.append((row[0], indent + row[1], row[2], row[3]))
        stack.extend((k, depth + 1) for k in reversed(kids.get(row[0], [])))
    # rows only reachable through a cycle: at the end, as roots
    out.extend(r for r in rows if r[0] not in placed)
    return out


__all__ = ["MAX_DEPTH", "PROC_PARENTS", "ProcParents", "tree_rows"]
