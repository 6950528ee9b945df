"""Where a mouse click lands on the dashboard: a row or a column header of the
process table.

:func:`click_target` lays the last frame's :class:`rich.layout.Layout` out again
(``Layout.render``: the region of each named part) and finds the part named
``procs``: its lines are the title, the column headers, the header rule, then the rows
(:func:`ringtool.trace.dashboard.tui_panels.table`). A click on a header is the column whose
name is nearest to it; elsewhere it is nothing. Only on a click, never per frame.
"""

from __future__ import annotations

from rich.console import Console
from rich.layout import Layout

from ringtool.trace.dashboard.tui_view import ViewState

#: Lines of a dashboard table above its first row: title, headers, the rule.
HEAD_LINES = 3


def click_target(
    layout: Layout, console: Console, x: int, y: int, view: ViewState
) -> tuple[int | None, int | None]:
    """``(row, column)`` of a click at cell ``x``, ``y`` (0-based): the index of the
    process row among those shown, or of the column (of ``view.columns``, the table's
    headers) whose header was clicked; both None when the click is elsewhere."""
    width, height = console.size
    procs = layout.get("procs")
    if procs is None:
        return None, None
    regions = layout.render(console, console.options.update_dimensions(width, height))
    if procs not in regions:
        return None, None
    region, lines = regions[procs]
    cx, cy = x - region.x, y - region.y
    if not (0 <= cx < region.width and 0 <= cy < region.height):
        return None, None
    if cy >= HEAD_LINES:
        return cy - HEAD_LINES, None
    if cy != 1:
        return None, None
    head = "".join(seg.text for seg in lines[1])
    best: tuple[int, int] | None = None  # (distance, column)
    for i, name in enumerate(view.columns):
        at = head.find(name)
        if at < 0:
            continue
        dist = 0 if at <= cx < at + len(name) + 1 else min(abs(cx - at), abs(cx - at - len(name)))
        if best is None or dist < best[0]:
            best = (dist, i)
    return None, best[1] if best is not None else None


__all__ = ["HEAD_LINES", "click_target"]
