"""The outputs' stream during a read (:mod:`ringtool.trace.held_writes`, no kernel):
nothing reaches the real stream while the read is held, everything in order (and
flushed) when it ends, also after an error; outside a hold, writes go straight
through; the rest of the stream's interface is the stream's."""

from __future__ import annotations

import io

import pytest

from ringtool.trace.held_writes import HeldWrites


class _Stream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


def test_writes_wait_for_the_end_of_the_hold() -> None:
    real = _Stream()
    held = HeldWrites(real)
    with held.hold():
        held.write("a\n")
        held.flush()
        held.write("b\n")
        assert real.getvalue() == "" and real.flushes == 0
    assert real.getvalue() == "a\nb\n" and real.flushes == 1
    held.write("c\n")  # no hold: straight through
    assert real.getvalue() == "a\nb\nc\n"
    held.flush()
    assert real.flushes == 2


def test_an_error_in_the_hold_loses_nothing_written() -> None:
    real = _Stream()
    held = HeldWrites(real)
    with pytest.raises(RuntimeError), held.hold():
        held.write("formatted\n")
        raise RuntimeError("the sink failed")
    assert real.getvalue() == "formatted\n"


def test_the_rest_is_the_streams() -> None:
    real = _Stream()
    held = HeldWrites(real)
    assert held.isatty() is False and held.getvalue() == ""
    with held.hold():
        pass
    assert real.flushes == 0  # nothing held: nothing written
