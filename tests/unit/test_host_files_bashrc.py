"""scripts/host-files.sh's block in bash.bashrc (RINGTOOL_BASHRC: a file of the test's):
every result is valid bash (``bash -n``), install + uninstall give back the original
bytes, and what setup did not write is never removed.

Before: a file without a final newline got the begin marker glued to its last line (a
syntax error in every interactive shell, left by uninstall), a begin marker without
its end made uninstall delete the lines after it, a user line sourcing a local
completion file kept the block out, and the file was rewritten in place."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.host_files import VENV, host_files

BEGIN = "# >>> ringtool: bash completion in interactive shells (scripts/host-files.sh) >>>"
END = "# <<< ringtool <<<"
BLOCK_LINE = ". /usr/share/bash-completion/bash_completion"


def etc(tmp_path: Path) -> Path:
    """Where the prefix's bash.bashrc goes (RINGTOOL_BASHRC names it too)."""
    (tmp_path / "etc").mkdir(exist_ok=True)
    return tmp_path / "etc"


def valid(path: Path) -> bool:
    return subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def install(prefix: Path, bashrc: Path) -> str:
    return host_files(prefix, "install", str(VENV), bashrc=bashrc)


def uninstall(prefix: Path, bashrc: Path) -> str:
    return host_files(prefix, "uninstall", str(VENV), bashrc=bashrc)


ORIGINALS = {
    "no final newline": b"alias ll='ls -l'",
    "final newline": b"# system-wide\nalias ll='ls -l'\n",
    "empty": b"",
    "local completion sourced": b"source /usr/local/etc/bash_completion.d/git-prompt.sh\n",
}


@pytest.mark.parametrize("original", ORIGINALS.values(), ids=ORIGINALS.keys())
def test_install_twice_then_uninstall_gives_back_the_bytes(tmp_path: Path, original: bytes) -> None:
    bashrc = etc(tmp_path) / "bash.bashrc"
    bashrc.write_bytes(original)
    bashrc.chmod(0o640)
    assert "enabled bash completion" in install(tmp_path, bashrc)
    text = bashrc.read_text()
    assert valid(bashrc) and text.count(BEGIN) == 1 and BLOCK_LINE in text
    assert "enabled" not in install(tmp_path, bashrc)
    assert bashrc.read_text().count(BEGIN) == 1  # a second setup adds nothing
    assert stat.S_IMODE(bashrc.stat().st_mode) == 0o640
    uninstall(tmp_path, bashrc)
    assert bashrc.read_bytes() == original
    assert [p.name for p in bashrc.parent.iterdir() if p.name.startswith(".bash")] == []


def test_a_loader_already_there_keeps_the_block_out(tmp_path: Path) -> None:
    bashrc = etc(tmp_path) / "bash.bashrc"
    bashrc.write_bytes(b"if true; then\n  . /usr/share/bash-completion/bash_completion\nfi\n")
    assert "bash completion" not in install(tmp_path, bashrc)
    assert BEGIN not in bashrc.read_text()


def test_a_begin_marker_without_its_end_keeps_the_users_lines(tmp_path: Path) -> None:
    bashrc = etc(tmp_path) / "bash.bashrc"
    original = f"alias a=b\n{BEGIN}\nalias keep=me\nexport KEEP=1\n".encode()
    bashrc.write_bytes(original)
    assert "no end marker" in install(tmp_path, bashrc)
    assert "no end marker" in uninstall(tmp_path, bashrc)
    assert bashrc.read_bytes() == original


def test_a_begin_marker_without_its_end_before_a_whole_block_keeps_the_lines_between(
    tmp_path: Path,
) -> None:
    # before: uninstall took the first begin marker and the block's end as one block
    # and removed the user's lines between them
    bashrc = etc(tmp_path) / "bash.bashrc"
    original = f"{BEGIN}\nalias keep=me\nexport KEEP=1\n".encode()
    block = f"{BEGIN}\nif true; then\n  {BLOCK_LINE}\nfi\n{END}\n".encode()
    bashrc.write_bytes(original + block)
    assert "bash completion" not in install(tmp_path, bashrc)  # a whole block is there
    assert bashrc.read_bytes() == original + block
    out = uninstall(tmp_path, bashrc)
    assert "removed the bash completion block" in out and "no end marker" in out, out
    assert bashrc.read_bytes() == original


def test_a_block_glued_by_an_older_setup_is_repaired(tmp_path: Path) -> None:
    bashrc = etc(tmp_path) / "bash.bashrc"
    original = b"alias ll='ls -l'"
    bashrc.write_bytes(original)
    glued = f"{BEGIN}\nif true; then\n  {BLOCK_LINE}\nfi\n{END}\n".encode()
    bashrc.write_bytes(original + glued)
    assert not valid(bashrc)
    install(tmp_path, bashrc)
    assert valid(bashrc) and bashrc.read_text().count(BEGIN) == 1
    bashrc.write_bytes(original + glued)
    uninstall(tmp_path, bashrc)
    assert bashrc.read_bytes() == original


def test_a_symlink_is_followed_and_stays_a_symlink(tmp_path: Path) -> None:
    target = etc(tmp_path) / "real.bashrc"
    original = b"alias ll='ls -l'"
    target.write_bytes(original)
    link = etc(tmp_path) / "bash.bashrc"
    link.symlink_to(target)
    install(tmp_path, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert valid(target) and BEGIN in target.read_text()
    uninstall(tmp_path, link)
    assert link.is_symlink() and target.read_bytes() == original


def linked(prefix: Path) -> bool:
    """Whether install linked ``ringtool`` into the prefix's /usr/local/bin."""
    return (prefix / "usr" / "local" / "bin" / "ringtool").is_symlink()


def temp_files_left(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".bash.bashrc.")]


BROKEN_LINKS = {
    "a symlink loop": lambda etc: etc / "bash.bashrc",
    "a dangling symlink": lambda etc: etc / "no-such-dir" / "bash.bashrc",
}


@pytest.mark.parametrize("points_at", BROKEN_LINKS.values(), ids=BROKEN_LINKS.keys())
def test_a_broken_symlink_is_one_line_and_ringtool_is_still_linked(
    tmp_path: Path, points_at: Callable[[Path], Path]
) -> None:
    # before: readlink -f failed under set -e: install stopped (status 1, no word)
    # before linking ringtool
    link = etc(tmp_path) / "bash.bashrc"
    link.symlink_to(points_at(etc(tmp_path)))
    out = install(tmp_path, link)
    assert f"cannot edit {link}: a dangling symlink or a symlink loop" in out, out
    assert "bash completion not enabled" in out and linked(tmp_path)
    assert "block not removed" in uninstall(tmp_path, link)
    assert not linked(tmp_path) and link.is_symlink()


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` immutable (chattr +i) for the block; a skip where the file system
    refuses the attribute."""
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"this file system refuses chattr +i: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_immutable_bashrc_is_one_line_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    # before: the rename failed under set -e: status 1, .bash.bashrc.XXXXXX left behind,
    # ringtool not linked
    bashrc = etc(tmp_path) / "bash.bashrc"
    original = b"alias ll='ls -l'\n"
    bashrc.write_bytes(original)
    with immutable(bashrc):
        out = install(tmp_path, bashrc)
        assert f"cannot edit {bashrc}: Operation not permitted" in out, out
        assert "bash completion not enabled" in out and linked(tmp_path)
        assert bashrc.read_bytes() == original
        assert temp_files_left(bashrc.parent) == []
