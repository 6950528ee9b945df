"""After setup's host files (scripts/host-files.sh install, as scripts/setup.sh runs it),
a fresh interactive root shell — ``bash -ic`` with a clean environment and an empty
HOME, so only /etc/bash.bashrc is read — has ringtool's completion, and completing
``ringtool tr`` gives ``trace``. The install runs in a private mount namespace: a copy
of the host's /etc/bash.bashrc is bind-mounted over it and /etc/bash_completion.d,
/usr/local/bin and /usr/local/share/man are empty tmpfs, so the paths are the real ones
and the host's files are not touched. (The prefix test of the block itself:
tests/unit/test_completion_setup.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.completion import ASK, answer
from tests.helpers.paths import ROOT

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

_IN_NAMESPACE = """
set -eu
cp /etc/bash.bashrc "$WORK/bash.bashrc"
mount --bind "$WORK/bash.bashrc" /etc/bash.bashrc
for d in /usr/local/bin /etc/bash_completion.d /usr/local/share/man; do
    mkdir -p "$d" && mount -t tmpfs ringtool-test "$d"
done
bash scripts/host-files.sh install "$VENV" >&2
env -i HOME="$WORK/home" TERM=dumb PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    bash -ic "$ASK"
"""


def test_fresh_root_shell_completes_ringtool(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is missing")
    (tmp_path / "home").mkdir()
    env = dict(os.environ, WORK=str(tmp_path), VENV=sys.prefix, ASK=ASK, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", _IN_NAMESPACE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    got = answer(done.stdout)
    assert "ringtool" in got.spec, done.stdout
    assert got.replies == ["trace"], done.stdout
