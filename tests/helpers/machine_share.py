"""How the BPF tests share the machine when pytest-xdist runs the suite on several
workers (`make test`; docs/development.md, "In parallel").

A ``kernel`` test loads real BPF programs into the one kernel every worker shares. Each
test file is one xdist group (one worker runs its tests one after another: tests of a
file share names, commands and interfaces), and the files run side by side, except:

- **alone** (:data:`ALONE`): they read or change something every trace shares — a
  marker goes into every running trace, the kernel's BPF statistics and program list
  are machine-wide, the bpffs pin root's stale directories are removed by whichever
  trace starts next, ring wakeups are counted per batch of a paced producer. Such a
  test holds the machine's lock exclusively: no other BPF test runs meanwhile. They
  are one xdist group.
- **floods** (:data:`FLOODS`): tests that offer tens of thousands of events a second,
  or pin a producer and a consumer to CPUs and measure what kept up (the benches, a
  ring growing under load, a dashboard beside a busy process). One xdist group: one at
  a time, and never beside a *quiet-needing* test.
- **quiet-needing** (:data:`NEEDS_QUIET`): tests whose traces see every process of the
  machine (no ``-c``/``-p`` filter in the kernel) and check that nothing was lost or
  that the order held: beside a flood their rings could fill — a loss the trace
  counts, but not what the test is about. They run beside each other and beside the
  rest, not beside a flood.
- everything else (a trace filtered to its own command, its own maps run by
  ``BPF_PROG_TEST_RUN``, a broker) runs beside anything but a test that runs alone;
  the tests under :data:`SPREAD` are each a group of their own.

Two ``flock`` files in the directory every worker of the run shares carry this: the
machine's lock (alone: exclusive; the rest: shared) and the quiet lock (a flood:
exclusive; quiet-needing: shared). A turnstile before each makes it fair: a test
waiting for it exclusively stops new shared holders of that lock from starting and
gets it once the running ones have finished. Every test takes the machine's lock
before the quiet one.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

#: Test files or tests (relative to tests/) that run with no other BPF test, and why.
ALONE: dict[str, str] = {
    "kernel/trace/test_mark.py": "a marker goes into every running trace",
    "kernel/trace/test_mark_delivery.py": "a marker goes into every running trace",
    "kernel/trace/test_mark_libbpf.py": "a marker goes into every running trace",
    "kernel/trace/test_mark_namespaces.py": "a marker goes into every running trace",
    "export/test_mark_export.py": "a marker goes into every running trace",
    "kernel/trace/test_cost.py": "BPF statistics and `bpftool prog show` are machine-wide",
    "kernel/trace/test_pin_root.py": "the next trace to start removes stale pin directories",
    "kernel/cli/test_doctor_bpffs.py": "the next trace to start removes stale pin directories",
    "kernel/trace/test_net_leftovers.py": "it judges every trace's TC filters and pins",
    "kernel/trace/test_net_filter_namespaces.py": "it judges every trace's TC filters and pins",
    "kernel/trace/test_wakeups.py": "it counts a ring's wakeups per batch of a paced producer",
    "adversarial/test_dead_bridge.py": (
        "it waits 10 s for kmes-read to notice a dead bridge that had every exec of the machine"
    ),
    "kernel/trace/test_e2e.py::test_ordered_output_is_sorted_by_timestamp": (
        "every process's events, merged within a 2 ms window: a busy machine delays reads"
    ),
}

#: Test files (relative to tests/) that flood the machine with events or measure what
#: kept up on pinned CPUs.
FLOODS: frozenset[str] = frozenset({
    "kernel/bench/test_trace.py",
    "kernel/bench/test_peers.py",
    "kernel/bench/test_primitives.py",
    "kernel/bench/test_trace_net.py",
    "kernel/trace/test_ring_growth.py",
    "kernel/trace/test_ring_growth_cli.py",
    "kernel/trace/test_tui_procs.py",
    "kernel/trace/test_cpuwait_source.py",
    "kernel/trace/test_csv.py",
    "kernel/readers/test_consumer_position.py",
    "kernel/readers/test_perf_lease_batch.py",
    "kernel/readers/test_ring_resize.py",
    "kernel/merge/test_merge_rings.py",
    "export/test_publisher_cpu_shared.py",
})  # fmt: skip

#: Directories and files (relative to tests/) whose traces see the whole machine and
#: check that nothing was lost or the order held. (Most traces of the suite are
#: filtered to their own command in the kernel, or look for their own processes on a
#: screen: a flood beside them costs time, not a result.)
NEEDS_QUIET: tuple[str, ...] = (
    "kernel/trace/test_e2e.py",
    "kernel/programs/test_program_cache.py",
    "kernel/programs/test_cached_load.py",
    "kernel/trace/test_startup.py",  # no drop while the sources load, every process traced
)

#: Directories (relative to tests/) whose BPF tests are each a group of their own,
#: spread over the workers: each starts its own broker and traces a command of its own
#: name (their files hold the suite's longest tests).
SPREAD: tuple[str, ...] = ("export/",)

ALONE_GROUP, FLOODS_GROUP = "alone", "floods"


@dataclass(frozen=True)
class Placement:
    """Where a BPF test runs: its xdist ``group`` and the locks it holds."""

    group: str
    alone: bool = False
    flood: bool = False
    needs_quiet: bool = False
    spread: bool = False


def placement(nodeid: str) -> Placement:
    """The placement of the BPF test ``nodeid`` (``path::name``, the path relative to
    tests/)."""
    rel = nodeid.split("::", 1)[0]
    if rel in ALONE or any(nodeid.startswith(k + "::") for k in ALONE):
        return Placement(ALONE_GROUP, alone=True)
    if rel in FLOODS:
        return Placement(FLOODS_GROUP, flood=True)
    if rel.startswith(SPREAD):
        return Placement(nodeid, spread=True)
    return Placement(rel, needs_quiet=rel.startswith(NEEDS_QUIET))


def _flock(stack: ExitStack, path: Path, mode: int) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    stack.callback(os.close, fd)  # closing the last descriptor of a lock releases it
    fcntl.flock(fd, mode)
    return fd


def _modes(where: Placement) -> tuple[int, int | None]:
    """The machine lock's mode and the quiet lock's (None: not taken)."""
    machine = fcntl.LOCK_EX if where.alone else fcntl.LOCK_SH
    if where.flood or where.needs_quiet:
        return machine, fcntl.LOCK_EX if where.flood else fcntl.LOCK_SH
    return machine, None


class MachineLocks:
    """One worker's hold on the locks in ``directory`` (see the module doc). A worker
    keeps them from one test to the next while the next needs the same (the tests that
    run alone run one after another without letting others in between), and lets them
    go before a test that needs others, or none."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._stack = ExitStack()
        self._held: tuple[int, int | None] | None = None

    def hold(self, where: Placement | None) -> None:
        """Hold what ``where`` needs (None: nothing), waiting for it."""
        want = None if where is None else _modes(where)
        if want == self._held:
            return
        self.release()
        if want is None:
            return
        machine, quiet = want
        self._fair(machine, "machine")
        if quiet is not None:
            self._fair(quiet, "quiet")
        self._held = want

    def _fair(self, mode: int, name: str) -> None:
        """Lock ``name`` in ``mode`` after its turnstile (held only while waiting)."""
        turnstile = _flock(self._stack, self._directory / f"{name}.turnstile", fcntl.LOCK_EX)
        _flock(self._stack, self._directory / f"{name}.lock", mode)
        fcntl.flock(turnstile, fcntl.LOCK_UN)

    def keeps(self, where: Placement | None) -> bool:
        """Whether the next test, needing what ``where`` says, keeps what is held: only
        the machine held alone is kept (kept shared, it would let a worker going from
        test to test pass a test waiting to run alone)."""
        want = None if where is None else _modes(where)
        return want == self._held and want is not None and want[0] == fcntl.LOCK_EX

    def release(self) -> None:
        self._stack.close()
        self._held = None


@contextmanager
def machine_locks(directory: Path, where: Placement) -> Iterator[None]:
    """Hold the locks ``where`` needs, in ``directory``, for the ``with`` block."""
    locks = MachineLocks(directory)
    try:
        locks.hold(where)
        yield
    finally:
        locks.release()
