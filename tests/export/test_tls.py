"""TLS reaches nats-py: a nats-server that requires TLS with a self-signed certificate
is used with ``--export-tls-ca`` (``collect --tls-ca``), and refused in one line
without it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[NatsServer, Path]]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)  # fmt: skip
    server = NatsServer(tmp_path / "nats", tls=(cert, key))
    try:
        yield server, cert
    finally:
        server.stop()


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RINGTOOL, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_tls_with_the_servers_ca(tls_server: tuple[NatsServer, Path]) -> None:
    server, cert = tls_server
    url = f"tls://127.0.0.1:{server.port}"
    p = run("trace", "--quiet", "-d", "1", "--events", "exec", "--host-name", "tls1",
            "--export", url, "--export-tls-ca", str(cert))  # fmt: skip
    assert p.returncode == 0, p.stderr
    exported = json.loads(p.stdout)["export"]["exported"]
    c = run("collect", url, "--tls-ca", str(cert), "--json", "--drain")
    assert c.returncode == 0, c.stderr
    assert json.loads(c.stdout.splitlines()[-1])["per_host"]["tls1"]["events"] == exported


def test_tls_without_the_ca_is_one_line(tls_server: tuple[NatsServer, Path]) -> None:
    server, _ = tls_server
    p = run("trace", "--quiet", "-d", "1", "--events", "exec",
            "--export", f"tls://127.0.0.1:{server.port}")  # fmt: skip
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "CERTIFICATE_VERIFY_FAILED" in p.stderr, p.stderr
