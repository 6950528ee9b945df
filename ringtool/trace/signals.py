"""The signals ``ringtool trace`` acts on: SIGINT/SIGTERM/SIGHUP (stop; SIGHUP: the
terminal or ssh session went away) and SIGUSR1 (a flight recorder's dump).

:class:`StartSignals` holds them from the first line of ``ringtool``'s ``main``: a
signal that comes while the subcommand starts (imports, BCC compiling the sources) is
recorded instead of taking its default action (SIGUSR1's would kill the process, exit
138, before anything was written). ``ringtool trace`` takes the recorded ones when it
is ready for them: :class:`StopSignals` stops the run (it starts, writes its start line
and summary, and ends: exit 0) and the flight recorder
(:class:`~ringtool.trace.recorder.flight.FlightSession`) writes a dump on its first turn. Other
subcommands get them back at once (:meth:`StartSignals.release`): SIGINT is Ctrl-C
(exit 130), SIGTERM and SIGHUP their default action (a subcommand may install its
own: the bridge's SIGHUP reloads); a recorded SIGUSR1 is dropped and SIGUSR1 stays
ignored (no other subcommand uses it, and it never kills ringtool).

:class:`StopSignals`: SIGINT/SIGTERM/SIGHUP for the trace loop set a flag and wake the
loop's wait instead of raising, so the loop ends between batches, the summary always
matches what was written, and the TC filters and pin directories are removed.

Not handled: SIGQUIT keeps its default action (a core dump, for debugging: what a
trace attached stays until the kernel frees it, as after SIGKILL); a signal in the
first tens of milliseconds, while the interpreter starts and before ``main`` runs,
takes its default action.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

#: The signals that stop ``ringtool trace`` cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The signals ``ringtool trace`` handles: the stop signals, and the dump.
TRACE_SIGNALS = (*STOP_SIGNALS, signal.SIGUSR1)


def _ignore(signum: int, frame: object) -> None:
    """SIGUSR1 outside ``trace``: nothing. A handler, not ``SIG_IGN``, which the
    programs a subcommand runs would inherit across exec."""


class StartSignals:
    """The handler of :data:`TRACE_SIGNALS` while ringtool starts: each signal received
    is recorded until :meth:`claim` takes it. A context manager; installed from the
    main thread only (elsewhere nothing changes). On exit (or :meth:`release`) the
    previous handlers come back and a recorded SIGINT/SIGTERM nobody claimed is
    raised again under them."""

    def __init__(self) -> None:
        self.pending: set[int] = set()
        self._old: dict[int, Any] = {}
        self._usr1: Any = None  # the handler SIGUSR1 had, while it is ignored

    def __call__(self, signum: int, frame: object) -> None:
        self.pending.add(signum)

    def claim(self, signum: int) -> bool:
        """Whether ``signum`` was received and not claimed before (it is claimed now)."""
        if signum in self.pending:
            self.pending.discard(signum)
            return True
        return False

    def __enter__(self) -> StartSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in TRACE_SIGNALS:
                self._old[sig] = signal.signal(sig, self)
        return self

    def release(self, *, keep_usr1_ignored: bool = False) -> None:
        """The previous handlers back (once); SIGINT/SIGTERM/SIGHUP received and not
        claimed are raised again (SIGINT: KeyboardInterrupt), SIGUSR1 is dropped.
        ``keep_usr1_ignored`` (a subcommand other than trace): SIGUSR1 gets a handler
        that does nothing instead of its previous one (by default, death) until the
        context exits."""
        old, self._old = self._old, {}
        if keep_usr1_ignored and signal.SIGUSR1 in old:
            self._usr1 = old[signal.SIGUSR1]
        for sig, handler in old.items():
            if signal.getsignal(sig) is self:  # a handler installed since stays
                ignored = keep_usr1_ignored and sig == signal.SIGUSR1
                signal.signal(sig, _ignore if ignored else handler)
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            if old and self.claim(sig):
                signal.raise_signal(sig)
        self.pending.clear()

    def __exit__(self, *exc: object) -> None:
        self.release()
        if self._usr1 is not None and signal.getsignal(signal.SIGUSR1) is _ignore:
            signal.signal(signal.SIGUSR1, self._usr1)  # main() returns what it found
        self._usr1 = None


def claimed(old_handler: object, signum: int) -> bool:
    """Whether ``old_handler`` (what ``signal.signal`` returned when a handler for
    ``signum`` was installed) is a :class:`StartSignals` that received ``signum``
    during start-up (the caller then acts on it; it is claimed)."""
    return isinstance(old_handler, StartSignals) and old_handler.claim(signum)


class StopSignals:
    """:data:`STOP_SIGNALS` set :attr:`stopped` instead of raising, and wake the loop's
    ``select`` through ``signal.set_wakeup_fd`` (:meth:`fileno`). Only installed
    from the main thread (elsewhere signals keep their handlers); the old handlers
    and wakeup fd come back on exit. A stop signal that :class:`StartSignals`
    recorded during start-up sets :attr:`stopped` at once."""

    def __init__(self) -> None:
        self.stopped = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._old: dict[int, Any] = {}
        self._old_fd = -1

    def _handler(self, signum: int, frame: object) -> None:
        self.stopped = True

    def fileno(self) -> int:
        return self._r

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._old[sig] = signal.signal(sig, self._handler)
                if claimed(self._old[sig], sig):
                    self.stopped = True
            self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old:
            signal.set_wakeup_fd(self._old_fd)
            for sig, handler in self._old.items():
                signal.signal(sig, handler)
        os.close(self._r)
        os.close(self._w)


__all__ = ["STOP_SIGNALS", "TRACE_SIGNALS", "StartSignals", "StopSignals", "claimed"]
