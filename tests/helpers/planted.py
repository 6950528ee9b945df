"""Directories and links another user planted, for tests of paths root must not trust."""

from __future__ import annotations

import os
from pathlib import Path

#: The uid and gid of ``nobody``: "another user" (chown to it needs root).
NOBODY = 65534


def guarded_file(tmp_path: Path) -> Path:
    """A file in a directory of root's that no other user may write: the victim."""
    os.chmod(tmp_path, 0o755)
    guarded = tmp_path / "guarded"
    guarded.mkdir(mode=0o755, exist_ok=True)
    victim = guarded / "victim"
    victim.write_text("precious\n")
    return victim


def planted_link(where: Path, target: Path, *, link_uid: int, dir_uid: int) -> Path:
    """A symbolic link ``where/caps`` to ``target``, the link owned by ``link_uid`` and
    ``where`` (created 0755) by ``dir_uid``."""
    where.mkdir(mode=0o755, exist_ok=True)
    os.chown(where, dir_uid, dir_uid)
    link = where / "caps"
    link.symlink_to(target)
    os.lchown(link, link_uid, link_uid)
    return link
