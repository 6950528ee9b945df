"""The bounded hand-over between the ring drain and the publisher thread.

:meth:`BoundedQueue.put` never blocks: it takes a batch when the bytes waiting stay
within ``max_bytes`` and refuses it otherwise (the caller counts the batch's events as
``export_dropped``, reason ``queue_full``). The publisher thread takes batches with
:meth:`take`. ``on_put`` is called after a put that found the queue empty (the
publisher may be asleep: one wake-up per idle period, not one per batch).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from ringtool.export.wire import Batch


class BoundedQueue:
    """FIFO of :class:`Batch` es bounded by their ``nbytes`` (see module doc)."""

    def __init__(self, max_bytes: int, on_put: Callable[[], None] | None = None) -> None:
        self.max_bytes = max_bytes
        self.on_put = on_put
        self._items: deque[Batch] = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, batch: Batch) -> bool:
        """Queue ``batch`` unless that would pass ``max_bytes``; False when refused."""
        with self._lock:
            if self._bytes + batch.nbytes > self.max_bytes:
                return False
            was_empty = not self._items
            self._items.append(batch)
            self._bytes += batch.nbytes
        if was_empty and self.on_put is not None:
            self.on_put()
        return True

    def take(self) -> Batch | None:
        """The oldest batch, or None."""
        with self._lock:
            if not self._items:
                return None
            batch = self._items.popleft()
            self._bytes -= batch.nbytes
            return batch

    def take_all(self) -> list[Batch]:
        with self._lock:
            items = list(self._items)
            self._items.clear()
            self._bytes = 0
            return items

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes


__all__ = ["BoundedQueue"]
