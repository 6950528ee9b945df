"""An output stream whose writes wait while the loop holds a read of the rings.

The trace loop formats the records as views of the mapped rings and gives their space
back when the outputs are done with them (:mod:`ringtool.trace.batches`). Writing the
text to stdout can block (a slow pipe, a paused terminal): blocked inside the read, the
loop would keep that ring space from the producer, and the kernel would drop events a
copy would have saved. So the outputs write to a :class:`HeldWrites`, which keeps what
they write during :meth:`HeldWrites.hold` and writes it, in order and in one piece, when
the hold ends: after the read was consumed. Outside a hold it writes through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


class HeldWrites:
    """Wraps ``stream`` (see the module doc); every other attribute (``fileno``,
    ``isatty``, ``encoding``, ...) is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._held: list[str] | None = None

    def write(self, text: str) -> int:
        if self._held is not None:
            self._held.append(text)
        else:
            self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        if self._held is None:
            self.stream.flush()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Keep the writes made inside the block; write and flush them after it (also
        when it raised: what was formatted is not lost)."""
        self._held = []
        try:
            yield
        finally:
            held, self._held = self._held, None
            if held:
                self.stream.write("".join(held))
                self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


__all__ = ["HeldWrites"]
