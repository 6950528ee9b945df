"""What consumers hand out: owned records, and leases of zero-copy views."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from types import TracebackType

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


class Lease:
    """Zero-copy views of consumed-but-not-yet-released records.

    ``views[i]`` is a memoryview straight into the shared ring. The views are valid
    until the ``with`` block ends; then the consumer position is committed once for all
    of them and the views are released (using one afterwards raises ValueError).
    ``rings[i]`` is the ring index of ``views[i]``.
    """

    __slots__ = ("_commit", "_done", "rings", "views")

    def __init__(
        self, views: list[memoryview], rings: list[int], commit: Callable[[], None]
    ) -> None:
        self.views = views
        self.rings = rings
        self._commit = commit
        self._done = False

    def __len__(self) -> int:
        return len(self.views)

    def __iter__(self) -> Iterator[memoryview]:
        return iter(self.views)

    def __getitem__(self, i: int) -> memoryview:
        return self.views[i]

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def release(self) -> None:
        """Release the views and commit the consumer positions (idempotent)."""
        if self._done:
            return
        self._done = True
        for v in self.views:
            v.release()
        self._commit()


def join_commits(commits: Sequence[Callable[[], None]]) -> Callable[[], None]:
    """One commit callable that runs each of ``commits`` (every one, even if one fails)."""

    def commit() -> None:
        first: BaseException | None = None
        for c in commits:
            try:
                c()
            except BaseException as exc:
                first = first or exc
        if first is not None:
            raise first

    return commit
