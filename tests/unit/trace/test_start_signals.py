"""StartSignals: what ringtool does with SIGINT/SIGTERM/SIGUSR1 that come while it
starts (held, then claimed by the trace or given back), on real signals."""

from __future__ import annotations

import signal

import pytest

from ringtool.trace.signals import StartSignals, StopSignals, claimed


def test_usr1_is_recorded_claimed_once_and_never_fatal() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    with StartSignals() as held:
        signal.raise_signal(signal.SIGUSR1)  # its default action would end pytest
        old = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        assert claimed(old, signal.SIGUSR1)
        assert not claimed(old, signal.SIGUSR1)  # once
        signal.signal(signal.SIGUSR1, old)
        signal.raise_signal(signal.SIGUSR1)
    assert held.pending == set()  # an unclaimed USR1 is dropped
    assert signal.getsignal(signal.SIGUSR1) is before


def test_a_held_sigterm_stops_the_trace_loop_at_once() -> None:
    with StartSignals():
        signal.raise_signal(signal.SIGTERM)
        with StopSignals() as stop:
            assert stop.stopped


def test_release_gives_an_unclaimed_sigint_back_as_ctrl_c() -> None:
    held = StartSignals()
    with held:
        signal.raise_signal(signal.SIGINT)
        assert held.pending == {signal.SIGINT}
        with pytest.raises(KeyboardInterrupt):
            held.release()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_trace_sigusr1_stays_ignored_after_release() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    try:
        with StartSignals() as held:
            held.release(keep_usr1_ignored=True)
            assert signal.getsignal(signal.SIGUSR1) not in (before, signal.SIG_DFL, held)
            signal.raise_signal(signal.SIGUSR1)  # its default action would end pytest
        assert signal.getsignal(signal.SIGUSR1) is before  # given back at the end
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_a_held_sighup_stops_the_trace_loop_at_once() -> None:
    with StartSignals():
        signal.raise_signal(signal.SIGHUP)  # its default action would end pytest
        with StopSignals() as stop:
            assert stop.stopped
