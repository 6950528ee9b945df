"""Noticing CPU hotplug: a rate-limited, cached check of the online CPU list.

:class:`OnlineWatcher` remembers the online CPUs it last saw and, when asked
(:meth:`OnlineWatcher.check`), re-reads ``/sys/devices/system/cpu/online`` -- at most
once per ``interval_s`` (default 1 s), whatever the call rate -- and reports which CPUs
went offline and which came online since. Between two reads the answer is the cached
list: the consumers call ``check`` from their read loops, so this costs one clock read
per call and one small sysfs read per second.

The list source and the clock are injectable (``read``, ``clock``) so the logic is
tested without taking a CPU offline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ringtool.kernel.cpus import online_cpus

#: Seconds between two reads of the online list (a hotplug is noticed within this).
CHECK_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True)
class CpuChange:
    """CPUs that went offline and CPUs that came online since the previous check."""

    offline: tuple[int, ...]
    online: tuple[int, ...]

    def __bool__(self) -> bool:
        return bool(self.offline or self.online)


NO_CHANGE = CpuChange((), ())


class OnlineWatcher:
    """Tracks the online CPU set (see the module doc).

    ``initial``: the set the caller set itself up for (default: read now); a CPU that
    differs from it at the first read after ``interval_s`` is reported then.
    """

    def __init__(
        self,
        initial: Iterable[int] | None = None,
        *,
        interval_s: float = CHECK_INTERVAL_S,
        read: Callable[[], Sequence[int]] = online_cpus,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._clock = clock
        self.interval_s = interval_s
        self._online = frozenset(read() if initial is None else initial)
        self._last = clock()

    @property
    def online(self) -> frozenset[int]:
        """The online CPUs as of the last read (cached)."""
        return self._online

    def check(self, *, force: bool = False) -> CpuChange:
        """Re-read the online list if ``interval_s`` passed since the last read (or
        ``force``) and return what changed; :data:`NO_CHANGE` otherwise. A list that
        cannot be read counts as unchanged (tried again after the next interval)."""
        now = self._clock()
        if not force and now - self._last < self.interval_s:
            return NO_CHANGE
        self._last = now
        try:
            current = frozenset(self._read())
        except (OSError, ValueError):
            return NO_CHANGE
        if current == self._online:
            return NO_CHANGE
        change = CpuChange(
            offline=tuple(sorted(self._online - current)),
            online=tuple(sorted(current - self._online)),
        )
        self._online = current
        return change


__all__ = ["CHECK_INTERVAL_S", "NO_CHANGE", "CpuChange", "OnlineWatcher"]
