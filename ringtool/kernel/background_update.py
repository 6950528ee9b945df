"""A map's elements written by a thread while the caller goes on.

A write to an ARRAY_OF_MAPS or HASH_OF_MAPS returns only after an RCU grace period
(kernel/bpf/syscall.c, ``maybe_wait_bpf_programs``): milliseconds to tens of
milliseconds asleep, no CPU. :class:`BackgroundUpdate` makes that write
(:func:`ringtool.kernel.bpf.map_update_many`: one batch, one grace period) in a thread,
so that start-up loads its programs (the verifier's time) meanwhile. :meth:`wait`
returns once every element is written and raises what the write raised. Until it
returned the caller neither closes the map's fd nor attaches a program that reads
the map (its elements may still be missing).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ringtool.kernel import bpf


class BackgroundUpdate:
    """``items`` (``(key, value)`` bytes) being written to map ``fd`` by a thread."""

    def __init__(self, fd: int, items: Sequence[tuple[bytes, bytes]]) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(fd, list(items)), name="ringtool-map-update", daemon=True
        )
        self._thread.start()

    def _run(self, fd: int, items: list[tuple[bytes, bytes]]) -> None:
        try:
            bpf.map_update_many(fd, items)
        except BaseException as exc:  # raised by wait(), in the caller's thread
            self._error = exc

    def wait(self) -> None:
        """Return once the write is done; raise its error (at every call) if it failed."""
        self._thread.join()
        if self._error is not None:
            raise self._error


__all__ = ["BackgroundUpdate"]
