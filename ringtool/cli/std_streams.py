"""Whole writes on stdout and stderr, also under ``PYTHONUNBUFFERED=1`` or ``python -u``.

Unbuffered, Python's ``sys.stdout`` is a text layer straight over a raw ``FileIO``; a
raw ``write`` may write less than it was given (a blocking write to a full pipe that a
signal interrupts returns what went through: pipe(7), write(2)), and the text layer
drops the rest without a word. A ``trace --json`` stopped by Ctrl-C or SIGTERM while
its reader was behind then lost the rest of a batch: its summary counted lines that
were never written. :func:`whole_writes` puts a ``BufferedWriter`` (which writes on
until all is written, running signal handlers in between) under each such stream,
with ``write_through`` so that nothing waits in it: as unbuffered as before, and
nothing lost. Streams that are buffered already (the default) are left as they are.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO


def whole(stream: TextIO) -> TextIO:
    """``stream``, or when it is a text layer over a raw file, a write-through text
    layer over a buffered writer on the same descriptor (left open when the new
    layer is closed: the old stream still owns it)."""
    if not isinstance(stream, io.TextIOWrapper) or not isinstance(stream.buffer, io.RawIOBase):
        return stream
    raw = io.FileIO(stream.fileno(), "w", closefd=False)
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=True,
    )


def whole_writes() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` write whole (see the module doc); call
    once, first thing in an entry point."""
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout = whole(sys.stdout)
    sys.stderr = whole(sys.stderr)


__all__ = ["whole", "whole_writes"]
