"""What consumers hand out: owned records, and leases of zero-copy views."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np

from ringtool.errors import ArgumentError
from ringtool.kernel.closing import Closing

#: Counts returned by poll/consume are capped here, as libbpf caps them at INT_MAX.
COUNT_CAP = 2**31 - 1

#: Records copied per batch on the iterator path: bounded so a full ring never turns
#: into millions of live objects at once (allocation and GC costs grow with that).
READ_CHUNK = 4096


class Record:
    """One record, copied out of the ring: safe to keep.

    ``ring`` is the ring (buffer) index in its consumer, ``cpu`` the CPU it came from
    where the map type says (perf buffers), else None. (A plain slots class: it is
    built once per record on the iterator path, where a dataclass costs twice as much.)
    """

    __slots__ = ("cpu", "data", "ring")

    def __init__(self, data: bytes, ring: int, cpu: int | None = None) -> None:
        self.data = data
        self.ring = ring
        self.cpu = cpu

    def __repr__(self) -> str:
        return f"Record(ring={self.ring}, cpu={self.cpu}, data={self.data!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.data, self.ring, self.cpu) == (other.data, other.ring, other.cpu)

    __hash__ = None  # type: ignore[assignment]


class LeaseRing(Protocol):
    """What a lease needs of a ring to commit (see :class:`ringtool.readers.ring.Ring`)."""

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` records from ``start``."""
        ...

    def advance(self, pos: int) -> None:
        """Commit ``pos``: the records before it are consumed."""
        ...

    def overwritten_since(self, start: int, n: int) -> int:
        """How many of the first ``n`` records from ``start`` were overwritten by now."""
        ...

    def count_overwritten(self, n: int) -> None:
        """Count ``n`` records found overwritten before the release."""
        ...


#: One ring's part of a lease: (ring, start, end, index of its first view, views).
LeasePart = tuple[LeaseRing, int, int, int, int]


class Lease(Closing):
    """Zero-copy views of delivered-but-not-yet-committed records.

    ``views[i]`` is a memoryview straight into the shared ring (a record that wraps a
    perf ring is a reassembled copy). The views are valid until the lease is released:
    then the views are released (using one afterwards raises ValueError) and the
    consumer positions are committed -- once per ring -- and the consumer lock is
    given back. Leaving the ``with`` block releases it and commits *every* view, even
    when the block raises; ``release(n)`` commits only the first ``n`` and gives the
    rest back to the ring (the next call delivers them again). A lease dropped without
    release is released (all) when collected. ``rings[i]`` is the ring of ``views[i]``.
    """

    __slots__ = ("_checked", "_done", "_parts", "_unlock", "rings", "views")

    def __init__(
        self,
        views: list[memoryview],
        rings: list[int],
        parts: list[LeasePart],
        unlock: Callable[[], None],
    ) -> None:
        self.views = views
        self.rings = rings
        self._parts = parts
        self._unlock = unlock
        self._done = False
        self._checked: list[int] | None = None  # per part, from overwritten()

    def __len__(self) -> int:
        return len(self.views)

    def __iter__(self) -> Iterator[memoryview]:
        return iter(self.views)

    def __getitem__(self, i: int) -> memoryview:
        return self.views[i]

    def close(self) -> None:
        """:meth:`release` every view: what leaving the ``with`` block does."""
        self.release()

    def overwritten(self) -> list[int]:
        """Indices of the records (views; for a batch lease, records over all arrays)
        that the producer has overwritten by now -- only ever on a RINGBUF in overwrite
        mode (``BPF_F_RB_OVERWRITE``), oldest first per ring. Valid means: read the
        views, *then* ask; a record not listed was intact while you read it, a listed
        one may have changed under you. The release counts the listed ones as
        ``overwritten`` (asked again at release if never asked)."""
        checked = [ring.overwritten_since(start, k) for ring, start, _e, _at, k in self._parts]
        self._checked = checked
        return [
            at + i
            for (_r, _s, _e, at, _k), n in zip(self._parts, checked, strict=True)
            for i in range(n)
        ]

    def release(self, count: int | None = None) -> None:
        """Release the views and commit the first ``count`` of them (all by default);
        the others are delivered again by the next call. Idempotent."""
        total = len(self)
        n = total if count is None else count
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= total:
            raise ArgumentError(f"count must be an int in [0, {total}], not {count!r}")
        if self._done:
            return
        self._done = True
        checked = self._checked
        if checked is None:
            checked = [r.overwritten_since(s, k) for r, s, _e, _at, k in self._parts]
        self._drop()
        first: BaseException | None = None
        try:
            for (ring, start, end, at, k), lapped in zip(self._parts, checked, strict=True):
                taken = n - at  # how many of this ring's views are consumed
                try:
                    if lapped and taken > 0:
                        ring.count_overwritten(min(lapped, taken, k))
                    if taken >= k:
                        ring.advance(end)
                    elif taken > 0:
                        ring.advance(ring.position_after(start, taken))
                except BaseException as exc:  # commit the other rings all the same
                    first = first or exc
        finally:
            self._unlock()
        if first is not None:
            raise first

    def _drop(self) -> None:
        """Make what was handed out unusable (the views are released)."""
        for v in self.views:
            v.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            pass


class BatchLease(Lease):
    """Zero-copy numpy arrays of delivered-but-not-yet-committed records
    (:meth:`lease_batch <ringtool.readers.consumer.MultiRingConsumer.lease_batch>` of
    RingBuffer and PerfBuffer).

    ``arrays[i]`` holds a run of records of ring ``array_rings[i]`` (ring order, then
    record order): a run of records of exactly the dtype's size is a strided view
    straight into the mapped ring (RINGBUF: one that wraps is contiguous thanks to the
    double mapping; perf: a payload longer than the dtype, padded by the kernel, is a
    view of its first bytes, and a record that wraps the single-mapped ring is a
    reassembled copy); a record of another size is a copy (cut or zero-filled, as
    ``read_batch``). Counts (``len``, ``release(n)``) are in records, over all arrays
    in order; commits and the lock work as for :class:`Lease`. After the release the
    lease drops its arrays, but numpy cannot revoke a view: an array the caller still
    holds then shows whatever the producer writes into that space later — copy
    (``arr.copy()``) what must outlive the lease.
    """

    __slots__ = ("_records", "array_rings", "arrays")

    def __init__(
        self,
        arrays: list[np.ndarray[Any, Any]],
        array_rings: list[int],
        records: int,
        parts: list[LeasePart],
        unlock: Callable[[], None],
    ) -> None:
        super().__init__([], [], parts, unlock)
        self.arrays = arrays
        self.array_rings = array_rings
        self._records = records

    def __len__(self) -> int:
        return self._records

    def array(self) -> np.ndarray[Any, Any]:
        """All the records as one array: the view itself when there is one run, else
        a concatenated copy."""
        if len(self.arrays) == 1:
            return self.arrays[0]
        if not self.arrays:
            raise ArgumentError("the lease holds no records")
        return np.concatenate(self.arrays)

    def _drop(self) -> None:
        self.arrays = []
