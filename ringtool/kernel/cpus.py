"""CPU topology from sysfs: online and possible CPU lists.

The possible set is fixed at boot (per-CPU maps are sized by it), so it is read once
per process and cached; the online set changes with CPU hotplug and is read on every
call (:mod:`ringtool.kernel.hotplug` rate-limits that for periodic checks).
"""

from __future__ import annotations

import functools
from pathlib import Path

_SYS_CPU = Path("/sys/devices/system/cpu")


def parse_cpu_list(text: str) -> list[int]:
    """Parse the kernel's CPU list format (``"0-3,5,7-8"``) into sorted ids."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return sorted(cpus)


def online_cpus() -> list[int]:
    """The CPUs that are online now."""
    return parse_cpu_list((_SYS_CPU / "online").read_text())


def possible_cpus() -> list[int]:
    """The CPUs the kernel may ever bring online (per-CPU maps are sized by this);
    read from sysfs once per process (the set cannot change after boot)."""
    return list(_possible())


@functools.cache
def _possible() -> tuple[int, ...]:
    return tuple(parse_cpu_list((_SYS_CPU / "possible").read_text()))


@functools.cache
def possible_cpu_count() -> int:
    """Highest possible CPU id + 1 (cached: counter reads call this every time)."""
    return max(_possible()) + 1
