"""After the README's setup (scripts/setup.sh, as root), ``ringtool`` is a command on
root's login PATH and runs, so the README's examples work as written. The real setup
runs in a private mount namespace whose /usr/local/bin, /etc/bash_completion.d and
/usr/local/share/man are empty tmpfs and whose /etc/bash.bashrc is a copy: the paths
are the real ones, the host's files are not touched. A fresh interactive root shell
then has ringtool's completion, and ``ringtool-python`` imports ringtool, BCC and numpy
(the library's examples: Debian's ``python3`` has no ringtool). (Removal by ``make
uninstall``: tests/unit/test_host_files.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.helpers.paths import ROOT

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.host_only]


_IN_NAMESPACE = """
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp /etc/bash.bashrc "$work/bash.bashrc"  # setup adds its completion block to the copy
mount --bind "$work/bash.bashrc" /etc/bash.bashrc
for d in /usr/local/bin /etc/bash_completion.d /usr/local/share/man; do
    mkdir -p "$d" && mount -t tmpfs ringtool-test "$d"
done
bash scripts/setup.sh >&2
echo "which=$(bash -lc 'command -v ringtool')"
echo "link=$(readlink /usr/local/bin/ringtool)"
echo "version=$(bash -lc 'ringtool --version')"
bash -lc 'ringtool doctor' >&2 && echo doctor=ok
echo "sudo=$(sudo -n ringtool --version)"
echo "python=$(cd / && bash -lc 'ringtool-python -c "import bcc, numpy, ringtool; print(1)"')"
find /etc/bash_completion.d /usr/local/share/man -type f | sed 's/^/file=/'
mkdir "$work/home"
env -i HOME="$work/home" TERM=dumb PATH=/usr/bin:/bin bash -ic 'complete -p ringtool' \\
    | sed 's/^/complete=/'
"""


def test_setup_puts_ringtool_on_roots_login_path() -> None:
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is missing")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", _IN_NAMESPACE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    seen: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        seen.setdefault(key, []).append(value)
    assert seen["which"] == ["/usr/local/bin/ringtool"]
    assert seen["link"] == [str(ROOT / ".venv" / "bin" / "ringtool")]
    assert seen["version"][0].startswith("ringtool "), seen
    assert seen["doctor"] == ["ok"]
    assert seen["sudo"] == seen["version"]  # setup installs sudo; its secure_path has it
    assert seen["python"] == ["1"]  # ringtool-python: the library's examples run with it
    assert "ringtool" in seen["complete"][0]  # a fresh interactive root shell has it
    assert sorted(seen["file"]) == [
        "/etc/bash_completion.d/ringtool",
        "/usr/local/share/man/man1/ringtool.1",
    ]
