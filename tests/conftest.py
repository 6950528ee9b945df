"""Shared test setup: the ``kernel`` marker runs real BPF tests when the kernel allows."""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers.machine_share import (
    ALONE_GROUP,
    FLOODS_GROUP,
    MachineLocks,
    Placement,
    placement,
)

# No per-example time limit (hypothesis's default is 200 ms): a deadline is a timed
# assertion, and on a loaded machine or in the emulated VM an honest example can take
# longer. Slow properties show in the run's duration, not as failures.
settings.register_profile("ringtool", deadline=None)
settings.load_profile("ringtool")


@functools.cache
def kernel_bpf_unavailable() -> str | None:
    """Why real-BPF tests can't run here, or None when they can."""
    if os.geteuid() != 0:
        return "kernel tests need root (run the suite with sudo / as root)"
    try:
        from ringtool.kernel import bpf

        fd = bpf.map_create(bpf.MapType.RINGBUF, key_size=0, value_size=0, max_entries=4096)
        os.close(fd)
    except Exception as exc:
        return f"kernel lacks usable BPF RINGBUF maps: {exc}"
    try:
        import bcc  # noqa: F401
    except ImportError as exc:
        return f"BCC is not importable ({exc}): run `make setup`"
    return None


def _parallel(config: pytest.Config) -> bool:
    """True when pytest-xdist runs this session with workers (``-n N``, N > 0): in the
    controller (its option) and in each worker (which has ``workerinput``; its own
    ``numprocesses`` is not set)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return False
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", 0))


#: Why a ``host_only`` test does not run in the test VM.
HOST_ONLY = (
    "host_only: needs root but nothing of the kernel's version (packaging, the export "
    "to NATS, two real CPUs shared); CI runs it on the host, not again in the emulated VM"
)


def _placement(item: pytest.Item) -> Placement:
    rel = item.path.relative_to(Path(__file__).parent).as_posix()
    return placement("::".join([rel, *item.nodeid.split("::")[1:]]))


def _run_dir(config: pytest.Config) -> Path:
    """The directory every xdist worker of this run shares: the parent of the workers'
    own temporary directories (xdist gives each worker ``--basetemp ROOT/popen-gwN``),
    kept and removed by pytest as its temporary directories are."""
    return Path(config.option.basetemp).parent


@pytest.fixture(autouse=True, scope="session")
def _program_cache_of_the_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The tests' program cache (docs/trace.md, "Program cache") is one of this run's
    own, never root's /var/cache/ringtool: the first trace of each source and flags
    compiles, later ones (in-process and the CLI's subprocesses) load from it. Under
    pytest-xdist the workers share it (entries are written whole and renamed into place:
    two that compile the same program at once each write a whole entry). A run given
    RINGTOOL_CACHE_DIR keeps it."""
    if os.environ.get("RINGTOOL_CACHE_DIR"):
        yield
        return
    if hasattr(request.config, "workerinput"):
        cache = _run_dir(request.config) / "programs"
    else:
        cache = tmp_path_factory.mktemp("cache") / "programs"
    os.environ["RINGTOOL_CACHE_DIR"] = str(cache)
    try:
        yield
    finally:
        os.environ.pop("RINGTOOL_CACHE_DIR", None)


#: The worker's hold on the machine's locks (under pytest-xdist).
_LOCKS = pytest.StashKey[MachineLocks]()


def _needs(item: pytest.Item | None) -> Placement | None:
    return _placement(item) if item is not None and "kernel" in item.keywords else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under pytest-xdist a BPF test runs, fixtures and all, holding the locks its
    placement needs (tests/helpers/machine_share.py); kept for the next test when it
    needs the same."""
    if not hasattr(item.config, "workerinput"):
        yield
        return
    locks = item.config.stash.setdefault(_LOCKS, MachineLocks(_run_dir(item.config)))
    locks.hold(_needs(item))
    try:
        yield
    finally:
        if not locks.keeps(_needs(nextitem)):
            locks.release()


@pytest.fixture(autouse=True)
def _kernel_tests_first_on_the_cpus(request: pytest.FixtureRequest) -> None:
    """Under pytest-xdist, a worker running a test that loads no BPF program runs at
    nice 19 (its subprocesses too), one running a BPF test at nice 0: the BPF tests
    (a consumer keeping up with a producer, the dashboard answering a key, timestamps
    in order) then have the CPUs as when the suite ran in one process, and the pure
    tests fill what they leave."""
    if not _parallel(request.config):
        return
    want = 0 if "kernel" in request.keywords else 19
    if os.getpriority(os.PRIO_PROCESS, 0) != want:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, want)
        except PermissionError:  # not root: a nice value is not lowered again
            pass


@pytest.fixture(autouse=True)
def _cpu_affinity_kept() -> Iterator[None]:
    """Every test leaves pytest's thread on the CPUs it found it on. A test that pinned
    it and did not restore it ran every later test on one CPU, and one of them (the ring
    growth cap, sized from the process's CPUs) failed far from the cause: such a test
    now fails itself, and the CPUs are restored for the rest."""
    before = os.sched_getaffinity(0)
    yield
    after = os.sched_getaffinity(0)
    if after != before:
        os.sched_setaffinity(0, before)
        pytest.fail(
            f"the test left pytest's thread on CPUs {sorted(after)}, not {sorted(before)}: "
            "restore the affinity it changed"
        )


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _parallel(config):
        # Under pytest-xdist (`make test`) the BPF tests share the machine as
        # tests/helpers/machine_share.py says: each file one xdist group (or each test,
        # where they spread), a few alone, the floods one at a time. xdist hands out
        # groups in this order (the Makefile turns its reordering off): the tests that
        # run alone first, the floods, the tests that load no BPF program (the other
        # workers run them while the alone ones hold the machine), the spread ones (the
        # longest), then the other files, most tests first.
        places = {item: _placement(item) for item in items if "kernel" in item.keywords}
        sizes = Counter(p.group for p in places.values())
        for item, where in places.items():
            item.add_marker(pytest.mark.xdist_group(where.group))

        def order(item: pytest.Item) -> tuple[int, int]:
            where = places.get(item)
            if where is None:
                return (2, 0)
            if where.group == ALONE_GROUP:
                return (0, 0)
            if where.group == FLOODS_GROUP:
                return (1, 0)
            return (3 if where.spread else 4, -sizes[where.group])

        items.sort(key=order)  # stable: the order within a group is kept
    if os.environ.get("RINGTOOL_VM") == "1":
        for item in items:
            if "host_only" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=HOST_ONLY))
    reason = kernel_bpf_unavailable()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "kernel" in item.keywords:
            item.add_marker(skip)
