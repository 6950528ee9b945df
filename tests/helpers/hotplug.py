"""CPU hotplug for the kernel tests: real (CPU 1 offline and back, in the test VM only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CPU1_ONLINE = Path("/sys/devices/system/cpu/cpu1/online")
IN_VM = os.environ.get("RINGTOOL_VM") == "1"
needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs CPUs 0 and 1")
vm_only = pytest.mark.skipif(
    not (IN_VM and CPU1_ONLINE.exists()),
    reason="takes CPU 1 offline: only in the test VM (make test-vm sets RINGTOOL_VM=1)",
)


def set_cpu1(online: bool) -> None:
    """Take CPU 1 offline or bring it back (the kernel's sysfs switch)."""
    CPU1_ONLINE.write_text("1" if online else "0")
