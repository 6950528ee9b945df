"""The dashboard's tables, drawn cheaply: :class:`PanelTable`, a rich ``Table`` that
draws its one-line cells itself.

rich draws a table cell by cell through several layers (a ``Padding`` around each
cell, ``render_lines``, wrapping, ``set_shape``) and measures every cell through
``Measurement``: most of what a dashboard frame costs. The dashboard's tables are
simple (:func:`ringtool.trace.dashboard.tui_panels.table`: no edge, one line per cell,
cut with ``…``, padding of one), so :class:`PanelTable` measures each cell by its
text's width and renders it with the same :class:`rich.text.Text` calls rich makes
(``truncate``, ``pad_left``, ``render``) and the same styles, column widths and
segments: the screen is the same, at a fraction of the cost (``ringtool bench
trace``'s ``trace-tui-cpu``). A table it cannot draw so (a cell that is not a string
or :class:`~rich.text.Text`, or has more than one line, a box edge, lines between
rows, a table wider than its room, ...) is drawn by rich's ``Table``.

A new panel opts in by building its table with ``table()`` of
:mod:`ringtool.trace.dashboard.tui_panels` (or ``PanelTable`` in place of
``rich.table.Table``, same arguments).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich._ratio import ratio_distribute
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.containers import Lines
from rich.segment import Segment
from rich.style import Style
from rich.table import Column, Table
from rich.text import Text

#: A cell of more than one line (what ``str.splitlines`` splits on) or with a tab:
#: drawn by rich.
_MULTI = re.compile("[\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_NEWLINE = Text("\n")
_JUSTIFY = ("left", "right", "center", "default")


class PanelTable(Table):
    """A rich ``Table`` drawn fast when it is simple enough (see the module doc)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        drawn = self._fast(console, options)
        if drawn is None:
            yield from super().__rich_console__(console, options)
        else:
            yield from drawn

    def _simple(self) -> bool:
        """The table's settings are those :meth:`_fast` draws (the rest: rich)."""
        pad = self.padding
        return (
            self.columns != [] and self.box is not None and not self.show_edge
            and self.show_header and not self.show_footer and not self.show_lines
            and not self.leading and self.pad_edge and not self.collapse_padding
            and pad[0] == pad[2] == 0 and pad[1] == pad[3] == 1 and self.width is None
            and self.min_width is None and not self.row_styles
            and not any(r.end_section for r in self.rows)
            and all(_simple_column(c) for c in self.columns)
        )  # fmt: skip

    def _fast(self, console: Console, options: ConsoleOptions) -> list[Segment] | None:
        """The table's segments as rich's ``Table`` renders them, or None where it
        must render them itself."""
        if not self._simple() or options.legacy_windows:
            return None
        extra = len(self.columns) - 1  # a divider between columns, no edge
        room = options.max_width - extra
        if room < 3:
            return None
        texts = [self._column_texts(console, c) for c in self.columns]
        if any(t is None for t in texts):
            return None
        cols: list[list[Text]] = [t for t in texts if t is not None]
        widths = self._widths(cols, room)
        if widths is None or min(widths) < 3:  # no room for a cell in its padding: rich's
            return None
        table_width = sum(widths) + extra
        render_options = options.update(width=table_width, highlight=self.highlight, height=None)
        out: list[Segment] = []
        if self.title:
            out += self._annotation(console, render_options, self.title, self.title_style,
                                    "table.title", self.title_justify)  # fmt: skip
        out += self._body(console, options, cols, widths)
        if self.caption:
            out += self._annotation(console, render_options, self.caption, self.caption_style,
                                    "table.caption", self.caption_justify)  # fmt: skip
        return out

    def _column_texts(self, console: Console, column: Column) -> list[Text] | None:
        """The header and the cells of ``column`` as one-line texts (None: a cell
        that is not)."""
        texts: list[Text] = []
        for cell in [column.header, *column._cells]:
            if isinstance(cell, str):
                # rich's own reading of a string cell (markup, emoji) where it can matter
                text = console.render_str(cell, highlight=False) if "[" in cell or ":" in cell \
                    else Text(cell)  # fmt: skip
            elif isinstance(cell, Text):
                text = cell
            else:
                return None
            plain = text.plain
            if _MULTI.search(plain) or text.end != "\n" or text.justify == "full":
                return None
            no_wrap = column.no_wrap if text.no_wrap is None else text.no_wrap
            if not no_wrap or text.overflow == "ignore":
                return None
            texts.append(text)
        return texts

    def _widths(self, cols: list[list[Text]], room: int) -> list[int] | None:
        """Each column's width with its padding, as ``Table._calculate_column_widths``
        makes it for one-line cells (None: the table is wider than ``room``, where
        rich shrinks its columns)."""
        widths: list[int] = []
        for column, texts in zip(self.columns, cols, strict=True):
            widest = 0
            for text in texts:
                width = min(cell_len(text.plain), room)
                widest = max(widest, min((width if width >= 1 else 0) + 2, room))
            widest = min(widest, room)
            if column.min_width is not None:
                widest = max(widest, column.min_width + 2)
            widths.append(widest or 1)
        ratios = [c.ratio or 0 for c in self.columns if c.flexible]
        if self.expand and any(ratios):
            fixed = [0 if c.flexible else w for c, w in zip(self.columns, widths, strict=True)]
            flex_min = [(c.width or 1) + 2 for c in self.columns if c.flexible]
            flex = iter(ratio_distribute(room - sum(fixed), ratios, flex_min))
            widths = [f + next(flex) if c.flexible else w
                      for c, f, w in zip(self.columns, fixed, widths, strict=True)]  # fmt: skip
        total = sum(widths)
        if total > room:
            return None
        if total < room and self.expand:
            pads = ratio_distribute(room - total, widths)
            widths = [w + p for w, p in zip(widths, pads, strict=True)]
        return widths

    def _body(self, console: Console, options: ConsoleOptions, cols: list[list[Text]],
              widths: list[int]) -> list[Segment]:  # fmt: skip
        """The header, its rule and the rows (``Table._render`` for one-line cells)."""
        get_style = console.get_style
        border = get_style(self.style or "") + get_style(self.border_style or "")
        assert self.box is not None  # _simple
        box = self.box.substitute(options, safe=console.safe_box if self.safe_box is None
                                  else self.safe_box)  # fmt: skip
        header_style = get_style(self.header_style or "")
        cell_styles = [get_style(c.style or "") for c in self.columns]
        nrows = len(self.rows) + 1
        newline = Segment.line()
        out: list[Segment] = []
        for index in range(nrows):
            if index == 0:
                row_style = Style.null()
                styles = [header_style + get_style(c.header_style) for c in self.columns]
                vertical = box.head_vertical
            else:
                row_style = get_style(self.get_row_style(console, index - 1))
                styles = cell_styles
                vertical = box.foot_vertical if index == nrows - 1 else box.mid_vertical
            divider = Segment(vertical, border)
            if not vertical.strip():  # a blank divider takes the row's background
                divider = Segment(vertical, row_style.background_style + border)
            line: list[Segment] = []
            for i, column in enumerate(self.columns):
                if i:
                    line.append(divider)
                cell = cols[i][index]
                line += _cell(console, cell, widths[i] - 2, column, styles[i] + row_style)
            out += _merged(line)
            out.append(newline)
            if index == 0:
                out += [Segment(box.get_row(widths, "head", edge=False), border), newline]
        return out

    def _annotation(self, console: Console, options: ConsoleOptions, text: str | Text,
                    style: str | Style | None, default: str, justify: str
                    ) -> list[Segment]:  # fmt: skip
        """The title or caption, as ``Table.__rich_console__`` renders it."""
        shown: RenderableType = (
            console.render_str(text, style=Style.pick_first(style, default), highlight=False)
            if isinstance(text, str) else text
        )  # fmt: skip
        return list(console.render(shown, options=options.update(justify=justify)))  # type: ignore[arg-type]


def _merged(segments: list[Segment]) -> list[Segment]:
    """``segments`` with each run of one style in one segment (fewer segments to
    measure and fewer escape sequences to write)."""
    out: list[Segment] = []
    parts: list[str] = []
    style: Style | None = None
    for seg in segments:
        if parts and seg.style == style:
            parts.append(seg.text)
            continue
        if parts:
            out.append(Segment("".join(parts), style))
        parts, style = [seg.text], seg.style
    if parts:
        out.append(Segment("".join(parts), style))
    return out


def _simple_column(column: Column) -> bool:
    return (
        column.width is None and column.max_width is None and column.justify in _JUSTIFY
        and column.overflow in ("ellipsis", "crop", "fold") and not column.highlight
    )  # fmt: skip


def _cell(console: Console, text: Text, width: int, column: Column, style: Style
          ) -> Iterable[Segment]:  # fmt: skip
    """One cell's segments, its padding of one either side included: what rich's
    ``Padding`` around ``Text.__rich_console__`` (no wrap) gives, styled ``style``."""
    justify = text.justify or column.justify or "default"
    pad = Segment(" ", style)
    if not text.spans and justify in ("left", "right"):  # most cells: a plain string
        plain = text.plain if justify == "left" else text.plain.rstrip()
        short = width - cell_len(plain)
        if short >= 0:  # it fits: one segment of the text's style, padded as justified
            body = plain + " " * short if justify == "left" else " " * short + plain
            return [pad, Segment(body, style + console.get_style(text.style) if text.style
                                 else style), pad]  # fmt: skip
    overflow = text.overflow or column.overflow or "fold"
    line = text.copy()
    if justify == "left":
        line.truncate(width, overflow=overflow, pad=True)
    elif justify in ("right", "center"):
        line.rstrip()
        line.truncate(width, overflow=overflow)
        if justify == "center":
            line.pad_left((width - cell_len(line.plain)) // 2)
            line.pad_right(width - cell_len(line.plain))
        else:
            line.pad_left(width - cell_len(line.plain))
    line.truncate(width, overflow=overflow)
    out = [pad]
    joined = _NEWLINE.join(Lines([line]))
    out += [Segment(s.text, style + s.style) for s in joined.render(console)]
    short = width - cell_len(line.plain)
    if short > 0:  # what render_lines pads with
        out.append(Segment(" " * short, style))
    out.append(pad)
    return out


__all__ = ["PanelTable"]
