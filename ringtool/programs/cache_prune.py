"""The program cache's bound: which files of its directory go when an entry is written
(docs/trace.md, "Program cache").

Entries are never updated, so their modification time says when they were last used:
:meth:`~ringtool.programs.cache_store.ProgramStore.load` sets it to now when it is more
than :data:`TOUCH_AFTER_S` old (one ``futimens`` a day at most per entry, none on most
starts). :func:`prune`, run after each write, deletes in the directory

* every entry (``KEY.prog``, ``KEY.o``) not used for :data:`MAX_AGE_S` (another
  kernel's, another ringtool's or BCC's, sources since changed: their keys are never
  asked for again);
* beyond the newest :data:`MAX_ENTRIES` of the rest, the oldest;
* a writer's temporary file (``.KEY.SUFFIX.PID.tmp``) older than :data:`STALE_TMP_S`
  (its writer died before the rename).

The file just written (``keep``) is never deleted. Other names (not the cache's) are
left alone. A file that vanishes meanwhile (another trace pruning at once) is skipped.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass

#: Entries kept at most (about four per configuration of sources, kernel and version).
MAX_ENTRIES = 64
#: An entry not used for this long is deleted (30 days).
MAX_AGE_S = 30 * 86400
#: A load refreshes an entry's time when it is older than this (one day).
TOUCH_AFTER_S = 86400
#: A temporary file older than this is a dead writer's (one hour).
STALE_TMP_S = 3600
ENTRY_SUFFIXES = (".prog", ".o")


@dataclass(frozen=True)
class Bound:
    """How many entries stay at most and how long an unused one stays."""

    max_entries: int = MAX_ENTRIES
    max_age_s: float = MAX_AGE_S


#: The bound the cache uses.
DEFAULT_BOUND = Bound()


def _kind(name: str) -> str | None:
    """``"entry"``, ``"tmp"`` or None (not a file of the cache's)."""
    if name.startswith(".") and name.endswith(".tmp"):
        return "tmp"
    if not name.startswith(".") and name.endswith(ENTRY_SUFFIXES):
        return "entry"
    return None


def prune(
    dir_fd: int, keep: str, bound: Bound = DEFAULT_BOUND, now: float | None = None
) -> list[str]:
    """Delete what the module doc says from the directory ``dir_fd`` (``keep``: the
    file name just written); the names deleted."""
    now = time.time() if now is None else now
    entries: list[tuple[float, str]] = []
    doomed: list[str] = []
    for name in os.listdir(dir_fd):
        kind = _kind(name)
        if kind is None or name == keep:
            continue
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        age = now - st.st_mtime
        if kind == "tmp":
            if age > STALE_TMP_S:
                doomed.append(name)
        elif age > bound.max_age_s:
            doomed.append(name)
        else:
            entries.append((st.st_mtime, name))
    entries.sort(reverse=True)  # newest first; `keep` is one of the newest
    doomed += [name for _, name in entries[max(0, bound.max_entries - 1) :]]
    removed = []
    for name in doomed:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        removed.append(name)
    return removed


def touch_if_old(fd: int, mtime: float, now: float | None = None) -> None:
    """Set the open entry ``fd``'s times to now when its ``mtime`` is older than
    :data:`TOUCH_AFTER_S` (it was used: :func:`prune` keeps the entries used most
    recently)."""
    if (time.time() if now is None else now) - mtime > TOUCH_AFTER_S:
        os.utime(fd)


__all__ = [
    "DEFAULT_BOUND",
    "MAX_AGE_S",
    "MAX_ENTRIES",
    "TOUCH_AFTER_S",
    "Bound",
    "prune",
    "touch_if_old",
]
