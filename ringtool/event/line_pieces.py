"""Lines of a batch assembled from pieces: constant texts and per-record columns.

A batch's output lines (JSON, columns) are built a column at a time: each line is the
concatenation of the same sequence of pieces, a piece being either one ``str`` (the
same text in every line) or a list of ``n`` texts (one per record). :func:`lines_of`
gives the lines (one ``str`` each); :func:`text_of` gives the whole batch as ONE text,
each line followed by ``end``, built by putting every piece into one list with a slice
assignment per piece and joining once: no string is made per line, and the text is
not copied again to join the lines.
"""

from __future__ import annotations

from itertools import repeat

Piece = list[str] | str


def merged(pieces: list[Piece]) -> list[Piece]:
    """``pieces`` with adjacent constant texts joined into one."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        else:
            out.append(piece)
    return out


def lines_of(pieces: list[Piece], n: int) -> list[str]:
    """The ``n`` lines: each one's pieces joined."""
    parts = merged(pieces)
    if len(parts) == 1 and isinstance(parts[0], str):
        return [parts[0]] * n
    columns = [repeat(p, n) if isinstance(p, str) else p for p in parts]
    return list(map("".join, zip(*columns, strict=False)))  # repeat() is endless


def text_of(pieces: list[Piece], n: int, end: str = "\n") -> str:
    """The ``n`` lines as one text, each followed by ``end`` (``""`` when ``n`` is 0)."""
    parts = merged([*pieces, end])
    k = len(parts)
    flat: list[str] = [""] * (n * k)
    for j, p in enumerate(parts):
        flat[j::k] = [p] * n if isinstance(p, str) else p
    return "".join(flat)


__all__ = ["Piece", "lines_of", "merged", "text_of"]
