"""The ``ringtool trace`` filters beyond ``-p``/``-c``: what runs in the kernel, what not.

In the kernel (``-D`` constants of ``bpf/trace_event.h`` say which are on: compiled
in only when given; their values are read from the config map,
:func:`ringtool.trace.reading.cflags.config_values`; a rejected event reserves nothing,
so ``events + dropped + lost`` stays exactly the matching events):

* ``-t TID``: one thread (``TRACE_FILTER_TID``);
* ``-u UID``: the task's real uid (``TRACE_FILTER_UID``);
* ``--cgroup PATH``: a cgroup v2 directory and everything below it
  (``TRACE_FILTER_CGROUP``: the directory's cgroup id, which is its inode number, and
  its depth below the root, compared with ``bpf_get_current_ancestor_cgroup_id(level)``),
  see :func:`resolve_cgroup`;
* ``-x``: the open source reports failed calls only and the exec source failed exec
  attempts only (``TRACE_FILTER_FAILED``, decided at syscall exit; bpf/trace_open.c,
  bpf/trace_exec.c).

In user space, after the ring: ``-n REGEX`` on the comm (:class:`NameFilter`). Its
drops are counted before the regex: a record the ring had no room for is a drop
whatever its comm, so with ``-n`` the summary's ``dropped`` may include records the
regex would have left out (the exact, in-kernel ``-c`` has no such caveat).

This module is imported while the command line is parsed: no numpy at import time.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ringtool.errors import CgroupPathError
from ringtool.kernel.statfs import fs_type

if TYPE_CHECKING:
    import numpy as np

#: statfs(2) f_type of a cgroup v2 file system.
CGROUP2_SUPER_MAGIC = 0x63677270
#: The inode (= cgroup id) of a cgroup v2 hierarchy's root directory (kernfs).
CGROUP2_ROOT_INO = 1


@dataclass(frozen=True)
class CgroupFilter:
    """A ``--cgroup`` directory: its ``path`` as given, cgroup ``id`` and ``level``
    (0 for the root, 1 for a directory right below it, ...)."""

    path: str
    id: int
    level: int


def resolve_cgroup(path: str) -> CgroupFilter:
    """The cgroup v2 directory ``path`` as a :class:`CgroupFilter`.

    Its id is the directory's inode number; its level is counted by walking up to the
    hierarchy's root (inode 1) on the same file system. Raises
    :class:`CgroupPathError` (one line) for a path that does not exist, is not a
    directory, is not on a cgroup v2 file system, or whose root is not reachable (a
    cgroup namespace, or a subtree mounted on its own: the level is then unknown)."""
    if not path:
        raise CgroupPathError("the cgroup path is empty")
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
        fs = fs_type(real)
    except OSError as exc:
        raise CgroupPathError(f"{path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CgroupPathError(f"{path} is not a directory: give a cgroup v2 directory")
    if fs != CGROUP2_SUPER_MAGIC:
        raise CgroupPathError(
            f"{path} is not on a cgroup v2 file system (give a directory under the cgroup2 "
            "mount, e.g. /sys/fs/cgroup/... or /sys/fs/cgroup/unified/...)"
        )
    level, here, cur = 0, real, st
    while cur.st_ino != CGROUP2_ROOT_INO:
        parent = os.path.dirname(here)
        try:
            up = os.stat(parent)
        except OSError as exc:
            raise CgroupPathError(f"{path}: {parent}: {exc.strerror}") from None
        if parent == here or up.st_dev != cur.st_dev:
            raise CgroupPathError(
                f"{path}: the cgroup v2 root is not reachable from it (a cgroup namespace "
                "or a mounted subtree): give the path in the host's cgroup2 mount"
            )
        level, here, cur = level + 1, parent, up
    return CgroupFilter(path=path, id=st.st_ino, level=level)


def kernel_defines(
    *,
    tid: int | None = None,
    uid: int | None = None,
    cgroup: CgroupFilter | None = None,
    failed_only: bool = False,
) -> dict[str, int | str]:
    """The ``-D`` constants of the in-kernel filters given: each ``1`` (on); their
    values go to the config map (see the module doc)."""
    out: dict[str, int | str] = {}
    if tid is not None:
        out["TRACE_FILTER_TID"] = 1
    if uid is not None:
        out["TRACE_FILTER_UID"] = 1
    if cgroup is not None:
        out["TRACE_FILTER_CGROUP"] = 1
    if failed_only:
        out["TRACE_FILTER_FAILED"] = 1
    return out


class NameFilter:
    """``-n REGEX``: keeps the records whose comm matches (``re.search``, on the comm
    as :func:`ringtool.event.decode.cstr` decodes it), and every record of type
    ``always`` (the markers' type: filters never apply to markers, docs/trace.md). Each
    distinct comm is matched once and remembered (comms repeat; the cache is bounded)."""

    MAX_CACHE = 65536

    def __init__(self, pattern: re.Pattern[str], always: int | None = None) -> None:
        self.pattern = pattern
        self.always = always
        self._seen: dict[bytes, bool] = {}

    def match(self, comm: bytes) -> bool:
        """Whether the raw 16-byte comm field ``comm`` matches."""
        hit = self._seen.get(comm)
        if hit is None:
            text = comm.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")
            hit = self.pattern.search(text) is not None
            if len(self._seen) >= self.MAX_CACHE:
                self._seen.clear()
            self._seen[comm] = hit
        return hit

    def keep(self, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The records of the ``struct trace_event`` array ``arr`` whose comm matches
        or whose type is ``always``, in order (``arr`` itself when all are)."""
        import numpy as np

        if len(arr) == 0:
            return arr
        comms = arr["h"]["comm"]
        uniq, inverse = np.unique(comms, return_inverse=True)
        ok = np.array([self.match(bytes(c)) for c in uniq.tolist()], dtype=bool)
        mask = ok[inverse.reshape(-1)]
        if self.always is not None:
            mask |= arr["h"]["type"] == self.always
        return arr if mask.all() else arr[mask]


__all__ = [
    "CGROUP2_SUPER_MAGIC",
    "CgroupFilter",
    "NameFilter",
    "kernel_defines",
    "resolve_cgroup",
]
