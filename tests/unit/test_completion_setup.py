"""The bash completion block scripts/host-files.sh puts in /etc/bash.bashrc, in a
temporary prefix: added once to Debian's bash.bashrc (whose own lines are commented
out), not added where bash.bashrc loads bash-completion already, removed exactly by
uninstall; and a bash that reads the block completes ``ringtool tr`` to ``trace``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.completion import ASK, answer
from tests.helpers.host_files import VENV, host_files

LOADER = Path("/usr/share/bash-completion/bash_completion")
#: the end of Debian 12's /etc/bash.bashrc (package bash 5.2)
DEBIAN_BASHRC = """\
# System-wide .bashrc file for interactive bash(1) shells.
[ -z "${PS1-}" ] && return
# enable bash completion in interactive shells
#if ! shopt -oq posix; then
#  if [ -f /usr/share/bash-completion/bash_completion ]; then
#    . /usr/share/bash-completion/bash_completion
#  elif [ -f /etc/bash_completion ]; then
#    . /etc/bash_completion
#  fi
#fi
"""


def test_block_added_once_works_and_is_removed_exactly(tmp_path: Path) -> None:
    if not LOADER.exists():
        pytest.fail(f"{LOADER} is missing: setup installs the bash-completion package")
    prefix = tmp_path / "root"
    bashrc = prefix / "etc" / "bash.bashrc"
    bashrc.parent.mkdir(parents=True)
    bashrc.write_text(DEBIAN_BASHRC)
    bashrc.chmod(0o644)
    said = host_files(prefix, "install", str(VENV))
    assert f"enabled bash completion in {bashrc}" in said
    text = bashrc.read_text()
    assert text.startswith(DEBIAN_BASHRC) and text.count(">>> ringtool") == 1
    assert "enabled bash completion" not in host_files(prefix, "install", str(VENV))
    assert bashrc.read_text() == text  # idempotent
    # an interactive bash that reads it (and the prefix's completion directory)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TERM": "dumb",
           "BASH_COMPLETION_COMPAT_DIR": str(prefix / "etc" / "bash_completion.d")}  # fmt: skip
    done = subprocess.run(["bash", "--norc", "--noprofile", "-i", "-c", f". {bashrc}\n{ASK}"],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = answer(done.stdout)
    assert "ringtool" in got.spec and got.replies == ["trace"], done.stdout
    # uninstall restores the file byte for byte, mode too
    assert "removed the bash completion block" in host_files(prefix, "uninstall", str(VENV))
    assert bashrc.read_text() == DEBIAN_BASHRC
    assert bashrc.stat().st_mode & 0o777 == 0o644


def test_a_bashrc_that_loads_completion_is_left_alone(tmp_path: Path) -> None:
    prefix = tmp_path / "root"
    bashrc = prefix / "etc" / "bash.bashrc"
    bashrc.parent.mkdir(parents=True)
    own = DEBIAN_BASHRC + ". /usr/share/bash-completion/bash_completion\n"
    bashrc.write_text(own)
    assert "bash completion" not in host_files(prefix, "install", str(VENV))
    assert bashrc.read_text() == own
    host_files(prefix, "uninstall", str(VENV))
    assert bashrc.read_text() == own
