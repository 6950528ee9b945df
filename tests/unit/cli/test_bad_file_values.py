"""The bad values an outside run of ``ringtool`` found answered with a traceback or a
hang, each now one line naming the flag and exit status 2, before anything is loaded:
regular expressions that overflow or nest too deeply, files that cannot be read
(EACCES as a user, ENAMETOOLONG, ENOENT, EISDIR), a FIFO (opening one blocks until a
writer comes) and a device that never ends (``/dev/zero``), for every flag that names
a file to read. The real CLI in a child, with a deadline and a memory limit
(:mod:`tests.helpers.cli_values`)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli_values import fifo, one_line_usage_error, run_cli, shared_dir

URL = "nats://127.0.0.1:4222"
#: Every flag that names a file ringtool reads: (command, argv before the flag, flag).
READ_FLAGS = [
    ("trace", ["--export", URL], "--export-creds"),
    ("trace", ["--export", URL], "--export-tls-ca"),
    ("bridge", ["--export", URL], "--export-creds"),
    ("collect", [URL], "--creds"),
    ("collect", [URL], "--tls-ca"),
    ("bridge", [], "--config"),
]
IDS = [f"{c}{f}" for c, _, f in READ_FLAGS]


@pytest.fixture(scope="module")
def where() -> Iterator[Path]:
    with shared_dir() as d:
        (d / "unreadable").write_text("user:password\n")
        (d / "unreadable").chmod(0o000)
        (d / "closed").mkdir(mode=0o700)
        fifo(d / "fifo")
        yield d


def _check(command: str, argv: list[str], flag: str, value: str, **kw: bool) -> str:
    answer = run_cli([command, *argv, flag, value], **kw)
    return one_line_usage_error(answer, command, flag)


@pytest.mark.parametrize(
    "regex",
    ["a{99999999999}", "(" * 2000 + ")" * 2000, "(" * 5000 + ")" * 5000],
    ids=["overflow", "nested-2000", "nested-5000"],
)
def test_a_regex_that_cannot_compile_is_one_line(regex: str) -> None:
    line = _check("trace", [], "-n", regex)
    assert len(line) < 400, line  # the expression is quoted cut, not whole


@pytest.mark.parametrize(("command", "argv", "flag"), READ_FLAGS, ids=IDS)
def test_a_fifo_is_refused_without_opening_it(
    where: Path, command: str, argv: list[str], flag: str
) -> None:
    line = _check(command, argv, flag, str(where / "fifo"))
    assert "a FIFO, not a regular file" in line


@pytest.mark.parametrize(("command", "argv", "flag"), READ_FLAGS, ids=IDS)
def test_a_device_is_refused_without_reading_it(command: str, argv: list[str], flag: str) -> None:
    line = _check(command, argv, flag, "/dev/zero")
    assert "a character device, not a regular file" in line


@pytest.mark.parametrize(("command", "argv", "flag"), READ_FLAGS, ids=IDS)
def test_a_directory_is_refused(where: Path, command: str, argv: list[str], flag: str) -> None:
    assert "a directory, not a regular file" in _check(command, argv, flag, str(where))


@pytest.mark.parametrize(
    ("command", "argv", "flag"), [*READ_FLAGS, ("trace", [], "--cgroup")],
    ids=[*IDS, "trace--cgroup"],
)  # fmt: skip
def test_a_name_too_long_is_one_line(where: Path, command: str, argv: list[str], flag: str) -> None:
    line = _check(command, argv, flag, str(where / ("x" * 300)))
    assert "File name too long" in line
    line = _check(command, argv, flag, "/tmp/" + "y/" * 3000)  # longer than PATH_MAX
    assert "File name too long" in line and len(line) < 400, line


@pytest.mark.parametrize(("command", "argv", "flag"), READ_FLAGS[:-1], ids=IDS[:-1])
def test_a_missing_file_is_one_line(where: Path, command: str, argv: list[str], flag: str) -> None:
    assert "No such file or directory" in _check(command, argv, flag, str(where / "missing"))


@pytest.mark.parametrize(("command", "argv", "flag"), READ_FLAGS, ids=IDS)
def test_an_unreadable_file_as_a_user_is_one_line(
    where: Path, command: str, argv: list[str], flag: str
) -> None:
    for value in (where / "unreadable", where / "closed" / "x"):
        line = _check(command, argv, flag, str(value), as_nobody=True)
        assert "Permission denied" in line, line


def test_a_cgroup_in_a_closed_directory_as_a_user_is_one_line(where: Path) -> None:
    line = _check("trace", [], "--cgroup", str(where / "closed" / "x"), as_nobody=True)
    assert "Permission denied" in line


def test_collects_creds_errors_name_its_own_flag(where: Path) -> None:
    (where / "no-password").write_text("just-a-user\n")
    for value in (where / "unreadable", where / "no-password"):
        line = _check("collect", [URL], "--creds", str(value), as_nobody=True)
        assert "--export-creds" not in line, line
    assert "the first line must be user:password" in line


def test_a_bad_config_line_is_refused_while_parsing(where: Path) -> None:
    (where / "kmes.conf").write_text("capacity = 1M\nno equals sign\n")
    line = _check("bridge", [], "--config", str(where / "kmes.conf"))
    assert "kmes.conf: line 2 is not a `key = value` line" in line


#: Contents none of the file flags accepts, each holding a secret (a file named by
#: mistake, such as /etc/shadow): as text without '=' or ':', and as bytes not UTF-8.
SECRETS = {
    "text": b"SECRET-root-hash $6$SECRET\nmore\n",
    "not utf-8": b"ok\nSECRET\xff-root-hash\n",
}


@pytest.mark.parametrize("content", SECRETS.values(), ids=SECRETS.keys())
@pytest.mark.parametrize(("command", "argv", "flag"), READ_FLAGS, ids=IDS)
def test_a_file_that_does_not_parse_is_never_echoed(
    tmp_path: Path, command: str, argv: list[str], flag: str, content: bytes
) -> None:
    # before: --config echoed the line it could not parse (/etc/shadow's first line)
    (tmp_path / "secret").write_bytes(content)
    line = _check(command, argv, flag, str(tmp_path / "secret"))
    assert "SECRET" not in line and "$6$" not in line, line
    assert str(tmp_path / "secret") in line, line  # where: the file ...
    if content.isascii() and flag == "--config":
        assert "line 1 is not a `key = value` line" in line, line  # ... and its line
    if not content.isascii() and flag != "--tls-ca" and flag != "--export-tls-ca":
        assert "not UTF-8 text (line 2, column 7)" in line, line


@pytest.mark.parametrize("command", ["replay", "query"])
@pytest.mark.parametrize("kind", ["fifo", "device", "socket", "directory"])
def test_a_recording_that_is_no_regular_file_is_refused_before_it_is_opened(
    where: Path, command: str, kind: str
) -> None:
    # before: replay and query of a FIFO blocked in open() until the deadline
    if kind == "socket" and not (where / "sock").exists():
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(where / "sock"))
    path = {"fifo": where / "fifo", "device": Path("/dev/zero"), "socket": where / "sock",
            "directory": where / "closed"}[kind]  # fmt: skip
    if kind == "directory" and command == "query":
        return  # query reads a directory's recordings (collect --record)
    argv = [str(path), "select 1"] if command == "query" else [str(path)]
    line = one_line_usage_error(run_cli([command, *argv], timeout=20), command, str(path))
    assert "not a regular file" in line, line


@pytest.mark.parametrize("command", ["replay", "query"])
def test_a_kernel_file_that_blocks_a_read_is_no_recording(command: str) -> None:
    # before: /proc/kmsg (a regular file of size 0 whose read waits for the kernel's
    # next message) blocked replay and query until the deadline
    if not os.access("/proc/kmsg", os.R_OK):
        pytest.skip("/proc/kmsg cannot be read here")
    argv = ["/proc/kmsg", "select 1"] if command == "query" else ["/proc/kmsg"]
    answer = run_cli([command, *argv], timeout=20)
    assert answer.status == 1, answer
    assert answer.stderr.startswith(f"ringtool {command}: /proc/kmsg: not a ringtool recording")
    assert "the file is empty" in answer.stderr and len(answer.stderr.splitlines()) == 1


def test_query_skips_a_fifo_among_a_directorys_recordings(tmp_path: Path) -> None:
    (tmp_path / "host=web1").mkdir()
    fifo(tmp_path / "host=web1" / "x.arrows")
    answer = run_cli(["query", str(tmp_path), "select 1"], timeout=20)
    assert answer.status == 2, answer
    assert "no recordings" in answer.stderr, answer.stderr
