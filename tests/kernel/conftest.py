"""Fixtures shared by the kernel tests: a veth pair, CPU 1 restored after hotplug; and
the ``all_kernels`` marker on the tests whose behaviour depends on the kernel's version."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.hotplug import set_cpu1

#: Directories (under tests/kernel/) and files whose tests depend on the kernel's
#: version: ring layouts and their readers, program loading, event layouts, and the
#: trace sources' probes. ``make test-kernels`` (CI) runs them, and every test marked
#: ``all_kernels`` anywhere, on Debian's 6.12 and newest kernels besides the VM's 6.1
#: (vagrant/README.md). The dashboard (tmux), export and bench tests are left out:
#: slow under emulation, and they exercise ringtool more than the kernel.
ALL_KERNELS_DIRS = ("readers", "programs", "event", "merge")
ALL_KERNELS_FILES = (
    "trace/test_exec_args.py",
    "trace/test_exec_ppid.py",
    "trace/test_wakeups.py",
    "trace/test_net.py",
    "trace/test_open_family_filters.py",
    "trace/test_proc_names.py",
    "trace/test_latency.py",
    "trace/test_latency_maps.py",  # an mmapable ARRAY (5.5+) beside the hash
    "trace/test_mark.py",  # USER_RINGBUF (6.1+) and its drain program
    "trace/test_ring_growth.py",  # swapping a ring of an ARRAY_OF_MAPS under load
    "trace/test_task_fields.py",  # comm, uid, cgroup read at their BTF offsets
    "trace/test_startup_stderr.py",  # the headers of a kernel newer than clang
)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        try:
            rel = item.path.relative_to(here).as_posix()
        except ValueError:
            continue
        if rel.split("/", 1)[0] in ALL_KERNELS_DIRS or rel in ALL_KERNELS_FILES:
            item.add_marker(pytest.mark.all_kernels)


@pytest.fixture
def cpu1_restored() -> Iterator[None]:
    yield
    set_cpu1(True)


@pytest.fixture
def veth() -> Iterator[str]:
    """A veth pair in this namespace (IPv6 off: no autoconf noise); yields one end."""
    from pyroute2 import IPRoute

    tag = f"{os.getpid() % 100000}"
    host, peer = f"rtn{tag}a", f"rtn{tag}b"
    with IPRoute() as ipr:
        ipr.link("add", ifname=host, kind="veth", peer=peer)
        try:
            for name in (host, peer):
                Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6").write_text("1")
                ipr.link("set", index=ipr.link_lookup(ifname=name)[0], state="up")
            yield host
        finally:
            ipr.link("del", index=ipr.link_lookup(ifname=host)[0])
