"""A fresh bpffs over /sys/fs/bpf in a private mount namespace (``unshare -m``: the
host's /sys/fs/bpf is untouched), for tests of what ringtool does on a bpffs it did
not mount -- e.g. one of mode 1777, where any user may create entries."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.paths import RINGTOOL, ROOT


def in_fresh_bpffs(
    setup: str, command: Sequence[str], *, mode: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """In a new mount namespace: mount a bpffs on /sys/fs/bpf (``-o mode=MODE`` when
    given; the kernel's default is 1777), run the shell ``setup``, then ``ringtool
    COMMAND...`` from the repository root; its status and output."""
    opts = f"-o mode={mode} " if mode else ""
    ringtool = shlex.join([*RINGTOOL, *command])
    script = f"set -e; mount -t bpf {opts}bpf /sys/fs/bpf; {setup}\nexec {ringtool}"
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def scratch_pin_root() -> Iterator[Path]:
    """A pin root of the test's own on the host's bpffs (root's, mode 0700), removed
    after with what it holds."""
    root = Path(f"/sys/fs/bpf/ringtool-test-{uuid.uuid4().hex[:12]}")
    root.mkdir(mode=0o700)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
