"""One per-CPU KMES buffer: two sealed memfds, double-mapped (docs/kmes.md section 2).

Attach protocol v2 (docs/kmes.md §2.2-2.3): each per-CPU buffer is a *metadata* memfd
(4096 bytes, the page of docs/kmes.md section 3; read-write for everyone: consumers
own ``need_wake``) and a *data* memfd (``capacity`` bytes). The data memfd carries
``F_SEAL_FUTURE_WRITE`` once the writer has mapped it, and consumers get it opened
``O_RDONLY``: no consumer can change the events other consumers read. See
:mod:`ringtool.kernel.shm` for the seals.

:class:`KmesBuffer` is the producer's side (creates and owns both memfds, maps the data
region read-write). :class:`MappedBuffer` is a consumer's mapping of the two
descriptors it was given: metadata page read-write, data read-only.

Shared words. ``words64``/``words32`` are ``memoryview.cast("Q")``/``cast("I")`` views of
the metadata page: indexing one is a single aligned 8-/4-byte load or store (never
assembled from bytes), which is what KMES's release/acquire protocol needs. See
``ringtool/kmes/writer.py`` for how ordering holds on x86-64 and what ARM64 would need.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from ringtool.errors import KmesFormatError
from ringtool.kernel.shm import (
    DoubleMapping,
    create_sealed_memfd,
    reopen,
    seal_final,
    seal_future_write,
)
from ringtool.kmes import layout as L


def store_load_fence(lock: threading.Lock) -> None:
    """A full (StoreLoad) fence: acquire + release of a private, uncontended lock.

    docs/kmes.md §8.1 pairs "consumer stores need_wake, then loads write_pos" with "writer stores
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
    """Common part: the two descriptors, the mapping, its views and the static fields."""

    meta_fd: int
    data_fd: int
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
        """Release the views, unmap, close both descriptors (idempotent)."""
        if self.mapping.closed:
            return
        self.words64.release()
        self.words32.release()
        self.mapping.close()
        os.close(self.meta_fd)
        os.close(self.data_fd)


class KmesBuffer(_Mapped):
    """A new per-CPU buffer of ``capacity`` bytes (a power of two: docs/kmes.md §10.1)
    for ``cpu``.

    Creates the metadata memfd (4096 bytes, initialised per docs/kmes.md section 3 with
    ``generation``) and the data memfd (``capacity`` bytes), maps them (data read-write,
    double-mapped), then seals: data ``F_SEAL_FUTURE_WRITE`` + ``F_SEAL_SEAL``, metadata
    ``F_SEAL_SEAL``. Owns both descriptors until :meth:`close`; hand consumers :meth:`consumer_fds`.
    """

    def __init__(self, cpu: int, capacity: int, generation: int = L.FIRST_GENERATION) -> None:
        L.check_capacity(capacity)
        self.cpu = cpu
        self.capacity = capacity
        self.meta_fd = create_sealed_memfd(f"kmes-meta-cpu{cpu}", L.PAGE_SIZE)
        try:
            self.data_fd = create_sealed_memfd(f"kmes-data-cpu{cpu}", capacity)
        except BaseException:
            os.close(self.meta_fd)
            raise
        try:
            self.mapping = DoubleMapping(
                self.meta_fd, self.data_fd, L.PAGE_SIZE, capacity, writable_ring=True
            )
        except BaseException:
            os.close(self.meta_fd)
            os.close(self.data_fd)
            raise
        try:
            # Only after our writable mapping exists (docs/kmes.md §2.3: a read-only
            # descriptor alone can be re-opened O_RDWR through /proc).
            seal_future_write(self.data_fd)
            seal_final(self.meta_fd)
        except BaseException:
            self.mapping.close()
            os.close(self.meta_fd)
            os.close(self.data_fd)
            raise
        L.init_metadata(self.mapping.head, cpu_id=cpu, capacity=capacity, generation=generation)
        self._static = bytes(self.mapping.head[0 : L.OFF_GENERATION])  # magic .. data_offset
        self._views()
        self._generation = generation  # private copy: never read back from shared memory

    @property
    def private_generation(self) -> int:
        return self._generation

    def consumer_fds(self) -> tuple[int, int]:
        """Fresh ``(meta_fd, data_fd)`` for one consumer (the caller owns both): the
        metadata memfd re-opened read-write, the data memfd re-opened ``O_RDONLY``."""
        meta = reopen(self.meta_fd, os.O_RDWR)
        try:
            return meta, reopen(self.data_fd, os.O_RDONLY)
        except BaseException:
            os.close(meta)
            raise

    def restore_static(self) -> None:
        """Re-store cache line 0 (magic .. data_offset, generation) from private copies.

        A consumer may scribble the shared metadata page; the bridge calls this before
        answering an attach and from its service loop, so honest consumers (which
        validate the static fields when they map) are not turned away. Plain stores of
        the values the page had: honest readers see no change.
        """
        self.meta[0 : len(self._static)] = self._static
        # One aligned u64 store; pairs with the reader's generation load.
        self.words64[L.Q_GENERATION] = self._generation
        self.meta[L.OFF_RESERVED1 : L.OFF_WRITE_POS] = bytes(L.OFF_WRITE_POS - L.OFF_RESERVED1)

    def bump_generation(self) -> int:
        """docs/kmes.md §10.3 step 4: generation += 1 in this (old) buffer, one aligned u64 store.

        Release on x86-64 (stores stay in order): every event written to this buffer
        before the switch is visible before the new generation. Pairs with the reader's
        generation load in ``Reader.drain``.
        """
        self._generation += 1
        self.words64[L.Q_GENERATION] = self._generation
        return self._generation


def _writable(fd: int) -> bool:
    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY


#: A consumer may be scribbling the metadata page while we validate it; the bridge
#: re-stores it (before each attach and from its loop), so a bad snapshot is re-read
#: this many times, :data:`STATIC_RETRY_SLEEP` seconds apart, before giving up.
STATIC_RETRIES = 100
STATIC_RETRY_SLEEP = 0.001


def _read_static(meta_fd: int) -> L.StaticFields:
    """Cache line 0 of ``meta_fd``, validated; retried while it does not validate."""
    for _ in range(STATIC_RETRIES):
        try:
            return L.read_static(os.pread(meta_fd, L.PAGE_SIZE, 0))
        except KmesFormatError:
            time.sleep(STATIC_RETRY_SLEEP)
    return L.read_static(os.pread(meta_fd, L.PAGE_SIZE, 0))


class MappedBuffer(_Mapped):
    """A consumer's mapping of ``meta_fd`` + ``data_fd`` (it owns both from now on).

    Validates before mapping: the metadata page (magic, version, data_offset,
    capacity; re-read for a short while if a scribbling consumer made it invalid), the
    sizes (meta 4096 bytes, data ``capacity`` bytes) and that ``data_fd`` is not open
    for writing. Raises :class:`KmesFormatError` otherwise (both descriptors are closed
    on any failure).
    """

    def __init__(self, meta_fd: int, data_fd: int, *, cpu: int | None = None) -> None:
        self.meta_fd, self.data_fd = meta_fd, data_fd
        try:
            if _writable(data_fd):
                raise KmesFormatError("KMES data descriptor is writable (attach protocol v2)")
            meta_size, data_size = os.fstat(meta_fd).st_size, os.fstat(data_fd).st_size
            if meta_size != L.PAGE_SIZE:
                raise KmesFormatError(f"KMES metadata descriptor is {meta_size} bytes, not 4096")
            if cpu is None:
                static = _read_static(meta_fd)
                capacity, cpu = static.capacity, static.cpu_id
            else:
                # The attach reply named the CPU; the sealed data memfd's size is the
                # capacity. Neither comes from the page a consumer can scribble
                # (docs/kmes.md §3.5, §11.7).
                capacity = data_size
                L.check_capacity(capacity)
            if data_size != capacity:
                raise KmesFormatError(
                    f"KMES data descriptor is {data_size} bytes, expected {capacity}"
                )
            self.mapping = DoubleMapping(
                meta_fd, data_fd, L.PAGE_SIZE, capacity, writable_ring=False
            )
        except BaseException:
            os.close(meta_fd)
            os.close(data_fd)
            raise
        self.cpu = cpu
        self.capacity = capacity
        self._views()


#: The seals a consumer requires on both descriptors (attach protocol v2, docs/kmes.md):
#: the bridge cannot shrink or grow a buffer under its readers (SIGBUS).
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


def open_buffer(meta_fd: int, data_fd: int, cpu: int | None = None) -> MappedBuffer:
    """Map a (meta, data) pair after checking both are sealed against shrink and grow
    (else a bridge could truncate them under us: SIGBUS). Owns both descriptors:
    closes them and raises :class:`KmesFormatError` if they are refused."""
    try:
        for fd, what in ((meta_fd, "metadata"), (data_fd, "data")):
            try:
                seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            except OSError as exc:
                raise KmesFormatError(f"KMES {what} descriptor is not a memfd: {exc}") from None
            if seals & SEALS != SEALS:
                raise KmesFormatError(f"KMES {what} memfd is not sealed against shrink/grow")
    except BaseException:
        os.close(meta_fd)
        os.close(data_fd)
        raise
    try:
        return MappedBuffer(meta_fd, data_fd, cpu=cpu)
    except OSError as exc:  # MappedBuffer closed both
        raise KmesFormatError(f"cannot map the KMES buffer: {exc}") from None
