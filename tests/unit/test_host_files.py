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
    assert "linked fallback headers" in said and "linked" in said.splitlines()[-1]
    modules = f"lib/modules/{KREL}"
    installed = {
        f"{modules}/build",
        f"{modules}/source",
        f"{modules}/.ringtool-linked-headers",
        "usr/local/bin/ringtool",
        "etc/bash_completion.d/ringtool",
        "usr/local/share/man/man1/ringtool.1",
    }
    assert files_under(prefix) == installed
    link = prefix / "usr/local/bin/ringtool"
    assert os.readlink(link) == str(VENV / "bin" / "ringtool")
    assert os.readlink(prefix / modules / "build") == str(prefix / HEADERS)
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("ringtool "), version
    # a second setup changes nothing and says nothing
    assert host_files(prefix, "headers") + host_files(prefix, "install", str(VENV)) == ""
    said = host_files(prefix, "uninstall", str(VENV))
    assert files_under(prefix) == set(), said
    assert len(said.splitlines()) == 4  # the link, completion, man page, header links
    assert host_files(prefix, "uninstall", str(VENV)) == ""


def test_what_setup_did_not_make_is_left_alone(prefix: Path, tmp_path: Path) -> None:
    exact = prefix / "lib" / "modules" / KREL / "build" / "include"
    exact.mkdir(parents=True)  # the exact headers: nothing to link, nothing to remove
    own = prefix / "usr/local/bin/ringtool"
    own.parent.mkdir(parents=True)
    own.write_text("#!/bin/sh\n")  # e.g. a system-wide `pip install .`
    said = host_files(prefix, "headers") + host_files(prefix, "install", str(VENV))
    assert "left" in said and own.read_text() == "#!/bin/sh\n"
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
