"""Pinning the calling thread to CPUs for a block, and putting it back after."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator


@contextlib.contextmanager
def pinned(cpus: Iterable[int], *, required: bool = True) -> Iterator[None]:
    """The calling thread on ``cpus`` inside the block, and back on the CPUs it had
    after it (pytest's own thread left pinned would run every later test there: the
    conftest fixture fails such a test). ``required=False``: where the machine refuses
    those CPUs (it has fewer), the block runs where the thread was."""
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, set(cpus))
    except OSError:
        if required:
            raise
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
