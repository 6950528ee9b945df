"""scripts/host-files.sh in a temporary prefix (RINGTOOL_PREFIX): what setup puts
outside the checkout and what ``make uninstall`` removes are the same files, each step
is idempotent, and nothing it did not make is touched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.host_files import SCRIPT, VENV, host_files
from tests.helpers.paths import ROOT

KREL = os.uname().release
#: The environment without PYTHONPATH: what a user's shell has.
NO_PYTHONPATH = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
HEADERS = "usr/src/linux-headers-6.1.0-99-amd64"


def files_under(prefix: Path) -> set[str]:
    """Every file and link below ``prefix`` except the fake header packages."""
    return {
        str(p.relative_to(prefix))
        for p in prefix.rglob("*")
        if (p.is_symlink() or not p.is_dir())
        and not str(p.relative_to(prefix)).startswith("usr/src")
    }


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    """A root with Debian's generic headers (-amd64 and -common) and no /lib/modules."""
    (tmp_path / HEADERS / "include").mkdir(parents=True)
    (tmp_path / HEADERS.replace("-amd64", "-common")).mkdir(parents=True)
    return tmp_path


def test_setup_steps_then_uninstall_leave_nothing(prefix: Path) -> None:
    said = host_files(prefix, "headers") + host_files(prefix, "install", str(VENV))
    assert "linked fallback headers" in said and "linked" in said.splitlines()[-2]
    modules = f"lib/modules/{KREL}"
    installed = {
        f"{modules}/build",
        f"{modules}/source",
        f"{modules}/.ringtool-linked-headers",
        "usr/local/bin/ringtool",
        "usr/local/bin/ringtool-python",
        "etc/bash_completion.d/ringtool",
        "usr/local/share/man/man1/ringtool.1",
    }
    assert files_under(prefix) == installed
    link = prefix / "usr/local/bin/ringtool"
    assert os.readlink(link) == str(VENV / "bin" / "ringtool")
    assert os.readlink(prefix / modules / "build") == str(prefix / HEADERS)
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("ringtool "), version
    # ringtool-python: the venv's Python, from any directory (the library's examples)
    py = prefix / "usr/local/bin/ringtool-python"
    lib = subprocess.run([str(py), "-c", "import bcc, numpy, ringtool, sys; print(sys.prefix)"],
                         capture_output=True, text=True, cwd="/", env=NO_PYTHONPATH)  # fmt: skip
    assert lib.returncode == 0 and lib.stdout.strip() == str(VENV), lib.stderr
    # a second setup changes nothing and says nothing
    assert host_files(prefix, "headers") + host_files(prefix, "install", str(VENV)) == ""
    said = host_files(prefix, "uninstall", str(VENV))
    assert files_under(prefix) == set(), said
    assert len(said.splitlines()) == 5  # 2 commands, completion, man page, header links
    assert host_files(prefix, "uninstall", str(VENV)) == ""


def test_what_setup_did_not_make_is_left_alone(prefix: Path, tmp_path: Path) -> None:
    exact = prefix / "lib" / "modules" / KREL / "build" / "include"
    exact.mkdir(parents=True)  # the exact headers: nothing to link, nothing to remove
    own = prefix / "usr/local/bin/ringtool"
    own.parent.mkdir(parents=True)
    own.write_text("#!/bin/sh\n")  # e.g. a system-wide `pip install .`
    own_py = prefix / "usr/local/bin/ringtool-python"
    own_py.write_text('#!/bin/sh\nexec python3 "$@"\n')  # someone else's
    said = host_files(prefix, "headers") + host_files(prefix, "install", str(VENV))
    assert "left" in said and own.read_text() == "#!/bin/sh\n"
    assert f"left {own_py} alone" in said
    assert host_files(prefix, "uninstall", str(VENV)).count("left") == 1  # ringtool-python
    own_py.unlink()
    own.unlink()
    own.symlink_to(tmp_path / "other-checkout" / ".venv" / "bin" / "ringtool")
    said = host_files(prefix, "uninstall", str(VENV))
    assert own.is_symlink() and "left" in said
    assert exact.is_dir()
    assert files_under(prefix) == {"usr/local/bin/ringtool"}


def test_setup_and_make_uninstall_go_through_host_files() -> None:
    """setup.sh writes outside the checkout only through host-files.sh, and
    ``make uninstall`` passes it the venv setup links to."""
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert 'VENV="$REPO/.venv"' in setup
    assert 'host-files.sh" headers' in setup and 'host-files.sh" install "$VENV"' in setup
    code = "\n".join(ln for ln in setup.splitlines() if not ln.lstrip().startswith("#"))
    for writes_outside in ("ln -s", "install -m", "/usr/local/", "/etc/bash_completion"):
        assert writes_outside not in code
    make = (ROOT / "Makefile").read_text()
    assert "VENV  := .venv" in make
    assert 'scripts/host-files.sh uninstall "$(CURDIR)/$(VENV)"' in make


def test_usage_and_no_root_needed_only_with_a_prefix(tmp_path: Path) -> None:
    bad = subprocess.run(["bash", str(SCRIPT), "frobnicate"], capture_output=True, text=True,
                         env=dict(os.environ, RINGTOOL_PREFIX=str(tmp_path)))  # fmt: skip
    assert bad.returncode == 2 and "usage: host-files.sh" in bad.stderr
