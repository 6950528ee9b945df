"""Process-exit detection with a pidfd (``pidfd_open(2)``, Linux >= 5.3).

A pidfd refers to one process, not to a pid number: once it is open, a recycled pid
cannot be mistaken for the process. It becomes readable (``POLLIN``) when the process
has exited. Used by KMES readers to notice a dead bridge: a reader waiting on a bridge
that was killed ends with one clear error instead of sleeping forever (docs/kmes.md
§8.4).
"""

from __future__ import annotations

import os
import select

from ringtool.errors import KernelFeatureError


class ProcessWatch:
    """Watches process ``pid``; :meth:`exited` is a non-blocking check.

    If ``pid`` does not exist (it has already exited) the watch starts in the exited
    state; if the kernel has no pidfd_open, :class:`KernelFeatureError`. Owns one
    descriptor until :meth:`close`.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd = -1
        try:
            self._fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self._gone = True
            return
        except (AttributeError, OSError) as exc:
            raise KernelFeatureError(f"pidfd_open({pid}) failed: {exc}") from None
        self._gone = False
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)

    def exited(self, timeout: float = 0.0) -> bool:
        """Whether the process has exited (waits up to ``timeout`` seconds for it)."""
        if not self._gone and self._fd >= 0:
            self._gone = bool(self._poll.poll(max(0, int(timeout * 1000))))
        return self._gone

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
