"""Fixtures shared by the kernel tests: a veth pair, CPU 1 restored after hotplug."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.hotplug import set_cpu1


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
