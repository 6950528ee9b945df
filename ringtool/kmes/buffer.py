"""One per-CPU KMES buffer: a sealed memfd, double-mapped (KMES seed §5.1.4-6).

:class:`KmesBuffer` is the producer's side (creates and owns the memfd, maps the data
region read-write). :class:`MappedBuffer` is a consumer's mapping of a descriptor it was
given: metadata page read-write (consumers own ``need_wake``), data read-only.

Shared words. ``words64``/``words32`` are ``memoryview.cast("Q")``/``cast("I")`` views of
the metadata page: indexing one is a single aligned 8-/4-byte load or store (never
assembled from bytes), which is what KMES's release/acquire protocol needs. See
``ringtool/kmes/writer.py`` for how ordering holds on x86-64 and what ARM64 would need.
"""

from __future__ import annotations

import os
import threading

from ringtool.errors import KmesFormatError
from ringtool.kernel.shm import DoubleMapping, create_sealed_memfd
from ringtool.protocol import kmes_layout as L


def store_load_fence(lock: threading.Lock) -> None:
    """A full (StoreLoad) fence: acquire + release of a private, uncontended lock.

    §5.1.8.2 pairs "consumer stores need_wake, then loads write_pos" with "writer stores
    write_pos, then loads need_wake". Release/acquire alone don't order a store before a
    later load (x86-64 TSO lets a load pass an earlier store through the store buffer), so
    without this a wakeup could be lost. CPython's lock fast path is a locked
    read-modify-write (``lock cmpxchg``/``lock xadd`` in glibc's semaphores), a full barrier
    on x86-64. An ARM64 port needs a real ``dmb ish`` here (and ``stlr``/``ldar`` for the
    release stores/acquire loads of the shared words).
    """
    lock.acquire()
    lock.release()


class _Mapped:
    """Common part: the mapping, its views and the static fields."""

    fd: int
    cpu: int
    capacity: int
    mapping: DoubleMapping

    def _views(self) -> None:
        self.meta: memoryview = self.mapping.head
        self.data: memoryview = self.mapping.ring  # 2 x capacity, double-mapped
        self.words64: memoryview = self.meta.cast("Q")
        self.words32: memoryview = self.meta.cast("I")
        self.futex_addr = self.mapping.addr + L.OFF_FUTEX_COUNTER

    def generation(self) -> int:
        """Load generation (one aligned u64 load; pairs with :meth:`KmesBuffer.bump_generation`)."""
        return int(self.words64[L.Q_GENERATION])

    def close(self) -> None:
        """Release the views, unmap, close the fd (idempotent)."""
        if self.mapping.closed:
            return
        self.words64.release()
        self.words32.release()
        self.mapping.close()
        os.close(self.fd)


class KmesBuffer(_Mapped):
    """A new per-CPU buffer of ``capacity`` bytes (power of two, §5.1.3) for ``cpu``.

    The memfd is ``4096 + capacity`` bytes, sealed against shrink and grow; the metadata
    page is initialised per §5.1.6 with ``generation``. Owns ``fd`` until :meth:`close`.
    """

    def __init__(self, cpu: int, capacity: int, generation: int = L.FIRST_GENERATION) -> None:
        L.check_capacity(capacity)
        self.cpu = cpu
        self.capacity = capacity
        self.fd = create_sealed_memfd(f"kmes-cpu{cpu}", L.file_size(capacity))
        try:
            self.mapping = DoubleMapping(self.fd, L.PAGE_SIZE, capacity, writable_ring=True)
        except BaseException:
            os.close(self.fd)
            raise
        L.init_metadata(self.mapping.head, cpu_id=cpu, capacity=capacity, generation=generation)
        self._views()
        self._generation = generation  # private copy: never read back from shared memory

    @property
    def private_generation(self) -> int:
        return self._generation

    def bump_generation(self) -> int:
        """§5.1.8.4 step 4: generation += 1 in this (old) buffer, one aligned u64 store.

        Release on x86-64 (stores stay in order): every event written to this buffer
        before the switch is visible before the new generation. Pairs with the reader's
        generation load in ``Reader.drain``.
        """
        self._generation += 1
        self.words64[L.Q_GENERATION] = self._generation
        return self._generation


class MappedBuffer(_Mapped):
    """A consumer's mapping of the KMES descriptor ``fd`` (which it now owns).

    Validates the metadata page (magic, version, data_offset, capacity) and the file
    size before mapping; raises :class:`KmesFormatError` if it is not a KMES buffer.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        try:
            static = L.read_static(os.pread(fd, L.PAGE_SIZE, 0))
            size = os.fstat(fd).st_size
            if size != L.file_size(static.capacity):
                raise KmesFormatError(
                    f"KMES descriptor is {size} bytes, expected {L.file_size(static.capacity)}"
                )
            self.mapping = DoubleMapping(fd, L.PAGE_SIZE, static.capacity, writable_ring=False)
        except BaseException:
            os.close(fd)
            raise
        self.cpu = static.cpu_id
        self.capacity = static.capacity
        self._views()
