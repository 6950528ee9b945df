"""cgroup v2 directories for the tests: the mount, and a fresh cgroup removed after."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cgroup2_mount() -> Path:
    """Where the cgroup v2 hierarchy is mounted (an AssertionError when nowhere)."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _dev, mnt, fstype = line.split()[:3]
        if fstype == "cgroup2":
            return Path(mnt)
    raise AssertionError("no cgroup2 mount")


@contextmanager
def fresh_cgroup() -> Iterator[Path]:
    """A new cgroup v2 directory (with a child ``sub``), removed afterwards; processes
    left in it go back to the root first."""
    path = cgroup2_mount() / f"rtc-test-{secrets.token_hex(4)}"
    path.mkdir()
    (path / "sub").mkdir()
    try:
        yield path
    finally:
        for d in (path / "sub", path):
            for pid in (d / "cgroup.procs").read_text().split():
                (cgroup2_mount() / "cgroup.procs").write_text(pid)
            d.rmdir()
