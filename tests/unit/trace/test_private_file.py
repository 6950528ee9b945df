"""``--pcap``'s file: created 0600 without following a symlink, an existing file only
with ``--force`` (and then replaced by a new 0600 file of ours, still never through a symlink),
and never through a directory link another user could change."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ringtool.errors import UsageError
from ringtool.trace.writers.private_file import open_private
from tests.helpers.planted import NOBODY, guarded_file, planted_link

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


def test_a_new_file_is_0600(tmp_path: Path) -> None:
    path = tmp_path / "c.pcapng"
    old = os.umask(0)
    try:
        with open_private(path) as f:
            f.write(b"x")
    finally:
        os.umask(old)
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert path.read_bytes() == b"x"


@pytest.mark.parametrize("force", [False, True])
def test_a_symlink_is_never_followed(tmp_path: Path, force: bool) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"keep me")
    secret.chmod(0o600)
    link = tmp_path / "c.pcapng"
    link.symlink_to(secret)
    with pytest.raises(UsageError, match=r"^--pcap .*c\.pcapng: ") as err:
        open_private(link, force=force)
    assert ("--force" in str(err.value)) != force
    assert secret.read_bytes() == b"keep me"


def test_a_dangling_symlink_is_not_followed(tmp_path: Path) -> None:
    link = tmp_path / "c.pcapng"
    link.symlink_to(tmp_path / "planted")
    with pytest.raises(UsageError, match="exists: add --force"):
        open_private(link)
    assert not (tmp_path / "planted").exists()


def test_an_existing_file_needs_force(tmp_path: Path) -> None:
    path = tmp_path / "c.pcapng"
    path.write_bytes(b"old")
    with pytest.raises(UsageError) as err:
        open_private(path)
    assert str(err.value) == f"--pcap {path}: exists: add --force to overwrite it"
    assert path.read_bytes() == b"old"


@needs_root
def test_force_takes_a_planted_file_over(tmp_path: Path) -> None:
    path = tmp_path / "c.pcapng"
    path.write_bytes(b"planted by nobody")
    os.chown(path, NOBODY, NOBODY)
    path.chmod(0o666)
    with open_private(path, force=True) as f:
        f.write(b"packets")
    st = path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, os.getegid(), 0o600)
    assert path.read_bytes() == b"packets"


def test_force_refuses_a_hard_link(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.write_bytes(b"keep me")
    path = tmp_path / "c.pcapng"
    os.link(other, path)
    with pytest.raises(UsageError, match="2 hard links"):
        open_private(path, force=True)
    assert other.read_bytes() == b"keep me"


def test_force_writes_a_device_as_it_is() -> None:
    before = os.stat("/dev/null")
    with open_private(Path("/dev/null"), force=True) as f:
        f.write(b"x")
    after = os.stat("/dev/null")
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)


def test_force_on_a_fifo_without_reader_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"^--pcap .*fifo: "):
        open_private(fifo, force=True)


def test_force_replaces_the_file_a_holder_reads_nothing_new(tmp_path: Path) -> None:
    path = tmp_path / "c.pcapng"
    path.write_bytes(b"old")
    path.chmod(0o644)
    old_inode = path.stat().st_ino
    with path.open("rb") as held:  # opened before, as its owner would
        assert held.read() == b"old"
        with open_private(path, force=True) as f:
            f.write(b"packets")
        assert held.read() == b""
    st = path.stat()
    assert st.st_ino != old_inode and stat.S_IMODE(st.st_mode) == 0o600
    assert path.read_bytes() == b"packets"
    assert [p.name for p in tmp_path.iterdir()] == ["c.pcapng"]


def _fifo_with_reader(path: Path, uid: int) -> int:
    """A FIFO at ``path`` owned by ``uid``, and a read end open on it (returned)."""
    os.mkfifo(path, 0o666)
    os.chown(path, uid, uid)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


@needs_root
def test_force_refuses_a_fifo_another_user_owns(tmp_path: Path) -> None:
    fifo = tmp_path / "c.pcap"
    reader = _fifo_with_reader(fifo, NOBODY)  # as the user who planted it would read
    try:
        with pytest.raises(UsageError, match=f"^--pcap {fifo}: is a device or FIFO of uid "):
            open_private(fifo, force=True)
        assert os.read(reader, 100) == b""  # no writer came: nothing was written
    finally:
        os.close(reader)


def test_force_refuses_a_fifo_in_a_sticky_world_writable_directory(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: the FIFO's owner could have been anyone's
    fifo = shared / "c.pcap"
    reader = _fifo_with_reader(fifo, os.geteuid())
    try:
        with pytest.raises(UsageError, match="sticky directory anyone can write to"):
            open_private(fifo, force=True)
    finally:
        os.close(reader)


def test_force_writes_our_own_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "c.pcap"
    reader = _fifo_with_reader(fifo, os.geteuid())
    try:
        with open_private(fifo, force=True) as f:
            f.write(b"packets")
        assert os.read(reader, 100) == b"packets"
    finally:
        os.close(reader)


#: (link owner, owner of the directory holding it): either lets that user repoint it.
UNTRUSTED = [(NOBODY, NOBODY), (NOBODY, 0), (0, NOBODY)]


@needs_root
@pytest.mark.parametrize(("link_uid", "dir_uid"), UNTRUSTED)
@pytest.mark.parametrize(("name", "force"), [("victim", True), ("new", False)])
def test_nothing_is_written_through_another_users_directory_link(
    tmp_path: Path, link_uid: int, dir_uid: int, name: str, force: bool
) -> None:
    victim = guarded_file(tmp_path)
    link = planted_link(tmp_path / "user", victim.parent, link_uid=link_uid, dir_uid=dir_uid)
    with pytest.raises(UsageError, match=f"^--pcap {link}/{name}: {link} is a symbolic link "):
        open_private(link / name, force=force)
    assert victim.read_text() == "precious\n"
    assert [p.name for p in victim.parent.iterdir()] == ["victim"]


def test_a_link_in_a_world_writable_directory_without_sticky_bit_is_refused(
    tmp_path: Path,
) -> None:
    victim = guarded_file(tmp_path)
    link = planted_link(tmp_path / "open", victim.parent, link_uid=0, dir_uid=0)
    link.parent.chmod(0o777)  # anyone may rename our link away and plant theirs
    with pytest.raises(UsageError, match="another user could change"):
        open_private(link / "victim", force=True)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("mode", [0o755, 0o1777])
def test_our_own_directory_link_is_followed(tmp_path: Path, mode: int) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = planted_link(tmp_path / "ours", real, link_uid=os.geteuid(), dir_uid=os.geteuid())
    link.parent.chmod(mode)  # sticky: only we could rename or remove our link
    with open_private(link / "c.pcap") as f:
        f.write(b"packets")
    with open_private(link / "c.pcap", force=True) as f:
        f.write(b"again")
    assert (real / "c.pcap").read_bytes() == b"again"


@needs_root
def test_a_trusted_link_to_a_path_through_another_users_link_is_refused(
    tmp_path: Path,
) -> None:
    victim = guarded_file(tmp_path)
    theirs = planted_link(tmp_path / "user", victim.parent, link_uid=NOBODY, dir_uid=NOBODY)
    ours = planted_link(tmp_path / "ours", theirs, link_uid=0, dir_uid=0)
    with pytest.raises(UsageError, match="another user could change"):
        open_private(ours / "victim", force=True)
    assert victim.read_text() == "precious\n"


def test_a_relative_path_is_looked_up_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    with open_private(Path("sub/../sub/c.pcap")) as f:
        f.write(b"packets")
    assert (tmp_path / "sub" / "c.pcap").read_bytes() == b"packets"


def test_a_directory_part_that_is_not_a_directory_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    path = tmp_path / "file" / "c.pcap"
    with pytest.raises(UsageError, match=f"^--pcap {path}: {tmp_path}/file: Not a directory$"):
        open_private(path)


def test_a_link_loop_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(UsageError, match="Too many levels of symbolic links"):
        open_private(tmp_path / "a" / "c.pcap")
