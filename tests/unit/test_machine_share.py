"""The placement of the BPF tests under pytest-xdist (tests/helpers/machine_share.py):
every listed file exists, and the locks exclude what they say, fairly."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.machine_share import (
    ALONE,
    ALONE_GROUP,
    FLOODS,
    FLOODS_GROUP,
    NEEDS_QUIET,
    SPREAD,
    MachineLocks,
    Placement,
    machine_locks,
    placement,
)

TESTS = Path(__file__).resolve().parents[1]


def test_every_listed_file_exists() -> None:
    """A renamed or removed test file would silently leave its place."""
    for entry in [*ALONE, *FLOODS, *NEEDS_QUIET, *SPREAD]:
        path = TESTS / entry.split("::", 1)[0]
        assert path.exists(), entry


def test_placements() -> None:
    assert placement("kernel/trace/test_mark.py::test_x") == Placement(ALONE_GROUP, alone=True)
    assert placement("kernel/bench/test_trace.py::test_y[a]") == Placement(FLOODS_GROUP, flood=True)
    quiet = placement("kernel/trace/test_e2e.py::test_z")
    assert quiet == Placement("kernel/trace/test_e2e.py", needs_quiet=True)
    filtered = placement("kernel/trace/test_filters.py::test_z")
    assert filtered == Placement("kernel/trace/test_filters.py")
    spread = placement("export/test_cluster.py::t[a]")
    assert spread == Placement("export/test_cluster.py::t[a]", spread=True)
    assert placement("kernel/readers/test_ringbuf.py::t") == Placement(
        "kernel/readers/test_ringbuf.py"
    )


def _held_by_another(directory: Path, name: str, mode: int) -> bool:
    """Whether ``mode`` on ``name`` would block now (another open file description)."""
    fd = os.open(directory / name, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.parametrize(
    ("where", "machine", "quiet"),
    [
        (Placement("g", alone=True), "exclusive", None),
        (Placement("g", flood=True), "shared", "exclusive"),
        (Placement("g", needs_quiet=True), "shared", "shared"),
        (Placement("g"), "shared", None),
    ],
)
def test_what_each_placement_holds(
    tmp_path: Path, where: Placement, machine: str, quiet: str | None
) -> None:
    with machine_locks(tmp_path, where):
        for name, held in (("machine.lock", machine), ("quiet.lock", quiet)):
            blocks_shared = _held_by_another(tmp_path, name, fcntl.LOCK_SH)
            blocks_exclusive = _held_by_another(tmp_path, name, fcntl.LOCK_EX)
            assert blocks_shared == (held == "exclusive"), name
            assert blocks_exclusive == (held is not None), name
        assert not _held_by_another(tmp_path, "machine.turnstile", fcntl.LOCK_EX)
    for name in ("machine.lock", "quiet.lock", "machine.turnstile"):
        assert not _held_by_another(tmp_path, name, fcntl.LOCK_EX), name


def test_a_waiting_alone_test_goes_before_later_shared_ones(tmp_path: Path) -> None:
    """Fair: while a shared holder runs, an alone test waits; a shared test arriving
    after it waits behind it, not beside the first holder."""
    order: list[str] = []
    first_in = threading.Event()
    release_first = threading.Event()

    def run(name: str, where: Placement, hold: threading.Event | None = None) -> None:
        with machine_locks(tmp_path, where):
            order.append(name)
            if hold is not None:
                first_in.set()
                assert hold.wait(10)

    first = threading.Thread(target=run, args=("first", Placement("a"), release_first))
    first.start()
    assert first_in.wait(10)
    alone = threading.Thread(target=run, args=("alone", Placement("b", alone=True)))
    alone.start()
    deadline = time.monotonic() + 10  # the alone test is in the turnstile, waiting
    while not _held_by_another(tmp_path, "machine.turnstile", fcntl.LOCK_EX):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    later = threading.Thread(target=run, args=("later", Placement("c")))
    later.start()
    time.sleep(0.2)
    assert order == ["first"]  # neither the alone test nor the later shared one ran
    release_first.set()
    for t in (first, alone, later):
        t.join(10)
    assert order == ["first", "alone", "later"]


def test_only_the_machine_held_alone_is_kept_for_the_next_test(tmp_path: Path) -> None:
    locks = MachineLocks(tmp_path)
    alone, shared = Placement("a", alone=True), Placement("b")
    locks.hold(alone)
    assert locks.keeps(alone) and not locks.keeps(shared) and not locks.keeps(None)
    locks.hold(shared)  # lets the exclusive hold go, then waits for a shared one
    assert _held_by_another(tmp_path, "machine.lock", fcntl.LOCK_EX)
    assert not _held_by_another(tmp_path, "machine.lock", fcntl.LOCK_SH)
    assert not locks.keeps(shared)  # a test waiting to run alone gets its turn
    locks.release()
    assert not _held_by_another(tmp_path, "machine.lock", fcntl.LOCK_EX)
