"""The ``net`` source's samples in timestamp order across CPUs.

A :class:`ringtool.PerfBuffer` is read one CPU after another. A sample written on CPU 0
just after CPU 0's buffer was read comes with the next read, after the later samples
the same read took from CPU 1: a packet answered on another CPU (a connection on
``lo``) would follow its answer in the output, which tshark reads in a ``--pcap`` as
a spurious retransmission.

:class:`NetReorder` holds the samples of each read and releases, sorted by their
kernel timestamp (``h.ts``: ``bpf_ktime_get_ns``, CLOCK_MONOTONIC), those stamped
before the moment the read began minus :data:`COMMIT_NS`. A sample is stamped by its
program, which writes it into its CPU's buffer in the same run (microseconds later),
so every sample stamped before that horizon was in the buffers when the read began
and has been taken by it or an earlier read. The rest wait for a later read, which
takes its own time; :meth:`NetReorder.flush` releases everything (the last read).
What comes out is in timestamp order (equal stamps in the order read), each sample
once; a sample waits at most until the first read that begins :data:`COMMIT_NS`
after its stamp, and never more than :data:`MAX_HOLD_NS` of the reader's clock (the
stamps' clock is the reader's CLOCK_MONOTONIC except in a time namespace that shifts
it; there the order is kept per read).
"""

from __future__ import annotations

import bisect
import collections
import struct

#: Bound on the time from a sample's stamp to its commit in the perf buffer: far more
#: than a TC program's run (the packet bytes copied, one ``bpf_perf_event_output``).
COMMIT_NS = 1_000_000

#: The stamp of a sample too short to hold one: before any horizon.
_SHORT = -(1 << 64)

#: The longest a sample is held, by the reader's clock, whatever its stamp says: the
#: stamps are bpf_ktime_get_ns, and a reader in a time namespace whose monotonic clock
#: is set back would otherwise hold every sample until the end.
MAX_HOLD_NS = 100_000_000

Sample = tuple[int, bytes]  # (cpu, raw sample: struct trace_net + packet bytes)


class NetReorder:
    """Holds net samples until they can be released in timestamp order (module doc).
    ``ts_offset``: where the u64 stamp is in a raw sample; a sample too short to hold
    it is released at once, first (the decoder counts it as malformed)."""

    def __init__(self, ts_offset: int, commit_ns: int = COMMIT_NS) -> None:
        self._ts = struct.Struct("<Q")
        self._offset = ts_offset
        self._commit_ns = commit_ns
        self._held: list[tuple[int, int, Sample]] = []  # (stamp, arrival no., sample)
        self._seq = 0
        self._reads: collections.deque[tuple[int, int]] = collections.deque()  # (began, max stamp)

    def _stamp(self, raw: bytes) -> int:
        if len(raw) < self._offset + self._ts.size:
            return _SHORT
        return int(self._ts.unpack_from(raw, self._offset)[0])

    def add(self, began_ns: int, samples: list[Sample]) -> list[Sample]:
        """Take the samples of a read that began at ``began_ns`` (``time.monotonic_ns()``
        before the buffers were read); returns those that can go out now, in order."""
        self._take(began_ns, samples)
        if not self._held:
            return []
        horizon = began_ns - self._commit_ns
        while self._reads and self._reads[0][0] <= began_ns - MAX_HOLD_NS:
            horizon = max(horizon, self._reads.popleft()[1])  # held long enough: out
        self._held.sort()  # mostly sorted already: each CPU's samples are
        cut = bisect.bisect_right(self._held, (horizon, self._seq))
        out, self._held = self._held[:cut], self._held[cut:]
        if not self._held:
            self._reads.clear()
        return [s for _, _, s in out]

    def _take(self, began_ns: int, samples: list[Sample]) -> None:
        newest = _SHORT
        for sample in samples:
            stamp = self._stamp(sample[1])
            self._held.append((stamp, self._seq, sample))
            self._seq += 1
            newest = max(newest, stamp)
        if samples:
            self._reads.append((began_ns, newest))

    def flush(self, samples: list[Sample]) -> list[Sample]:
        """The last read's ``samples`` and everything held, in order."""
        self._take(0, samples)
        out = sorted(self._held)
        self._held = []
        self._reads.clear()
        return [s for _, _, s in out]

    @property
    def held(self) -> int:
        """How many samples wait now."""
        return len(self._held)

    def release_at(self) -> int | None:
        """The monotonic ns after which a read that begins releases the oldest held
        sample (None: nothing is held); the reader should not sleep past it."""
        if not self._held:
            return None
        due = self._held[0][0] + self._commit_ns
        return min(due, self._reads[0][0] + MAX_HOLD_NS) if self._reads else due


__all__ = ["COMMIT_NS", "MAX_HOLD_NS", "NetReorder"]
