"""Credentials reach nats-py: a nats-server that requires user/password accepts the
ones given in the URL or with --export-creds, and refuses a wrong one in one line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer, nats_server
from tests.helpers.stream_check import read_stream

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[NatsServer]:
    with nats_server(tmp_path / "nats", user="tracer", password="s3cret:x") as server:
        yield server


def trace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RINGTOOL, "trace", "--quiet", "-d", "1", "--events", "exec", "--interval", "0.3",
         "--host-name", "auth", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_user_and_password_in_the_url(locked: NatsServer) -> None:
    url = f"nats://tracer:{'s3cret%3Ax'}@127.0.0.1:{locked.port}"
    p = trace("--export", url)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["export"]["export_dropped"] == 0
    assert "s3cret" not in p.stderr
    assert read_stream(locked).summaries["auth"]["kind"] == "summary"


def test_creds_file(locked: NatsServer, tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("tracer:s3cret:x\n")
    p = trace("--export", locked.url, "--export-creds", str(creds))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["export"]["export_dropped"] == 0
    assert "auth" in read_stream(locked).summaries


def test_wrong_password_is_one_line(locked: NatsServer, tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("tracer:wrong\n")
    for args in (["--export", locked.url, "--export-creds", str(creds)],
                 ["--export", f"nats://tracer:wrong@127.0.0.1:{locked.port}"]):  # fmt: skip
        p = trace(*args)
        assert p.returncode == 1
        assert p.stderr.count("\n") == 1, p.stderr
        assert "uthorization" in p.stderr and "wrong" not in p.stderr, p.stderr


def test_creds_file_without_a_password_line(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("just-a-user\n")
    p = trace("--export", "nats://127.0.0.1:4222", "--export-creds", str(creds))
    assert p.returncode == 2  # read and refused while parsing: a usage error
    assert p.stderr.strip() == (
        f"ringtool trace: argument --export-creds: credentials file {creds}: "
        "the first line must be user:password"
    )
