"""scripts/nats-server.sh VENV (setup's step 5): Debian 13's nats-server, 2.10.27 or
later, put at VENV/libexec/nats-server with apt in a configuration of its own. A venv that
has one already is left alone without a look at the network; an older one (Debian 12's
2.9.10) is replaced; the host's packages and sources are not touched. Against the real
Debian binaries (the host's 2.9.10, the venv's from ``make setup``) and Debian's archive."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ringtool.bench.local_server import fixed_nats_binary, nats_binary
from ringtool.export.stream_setup import purge_exposed
from tests.helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "nats-server.sh"
#: A mirror nothing answers at: a run that needs the network fails with it.
NO_MIRROR = {**os.environ, "RINGTOOL_DEBIAN_MIRROR": "http://127.0.0.1:1/debian"}
DEBIAN_12 = Path("/usr/sbin/nats-server")  # bookworm's package (setup's step 1)


def version(binary: Path) -> str:
    """``2.10.27`` for a binary that says ``nats-server: v2.10.27``."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    got = out.stdout.strip().removeprefix("nats-server: v")
    assert re.fullmatch(r"\d+\.\d+\.\d+", got), out
    return got


def run(venv: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(venv)], capture_output=True, text=True,
                          env=env, timeout=600)  # fmt: skip


def venv_with(tmp_path: Path, binary: Path) -> Path:
    (tmp_path / "libexec").mkdir()
    (tmp_path / "libexec" / "nats-server").symlink_to(binary)
    return tmp_path


def host_apt_state() -> str:
    """The host's installed nats-server and its apt sources, as one digest."""
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version} ${Status}", "nats-server"],
                         capture_output=True, text=True, timeout=30).stdout  # fmt: skip
    sources = sorted(Path("/etc/apt").glob("sources.list*")) + sorted(
        Path("/etc/apt/sources.list.d").glob("*")
    )
    h = hashlib.sha256(pkg.encode())
    for p in sources:
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_the_fixed_server_is_the_venvs_and_not_exposed() -> None:
    """What `make setup` left: the venv's Debian 13 server, a version whose account
    purge answers the system account only, beside Debian 12's exposed one on the PATH."""
    binary = fixed_nats_binary()
    assert binary is not None and binary.parent.parent == Path(sys.prefix), binary
    assert not purge_exposed(version(binary)), version(binary)
    assert nats_binary() != binary


def test_a_venv_with_a_new_enough_server_is_left_alone(tmp_path: Path) -> None:
    binary = fixed_nats_binary()
    assert binary is not None
    venv = venv_with(tmp_path, binary)
    done = run(venv, NO_MIRROR)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done
    assert (venv / "libexec" / "nats-server").resolve() == binary.resolve()


def test_an_older_server_is_replaced_or_the_failure_named(tmp_path: Path) -> None:
    """Debian 12's 2.9.10 in the venv: the script goes to the archive (here one that
    does not answer): one line says what failed and where to look; 2.9.10 stays."""
    assert purge_exposed(version(DEBIAN_12))
    venv = venv_with(tmp_path, DEBIAN_12)
    done = run(venv, NO_MIRROR)
    assert done.returncode == 1, done
    assert done.stderr.endswith(
        "setup: could not read trixie's index (the network? RINGTOOL_DEBIAN_MIRROR, apt's proxy)\n"
    ), done.stderr
    assert "127.0.0.1:1" in (venv / "nats-server-fetch.log").read_text()
    assert (venv / "libexec" / "nats-server").resolve() == DEBIAN_12
    assert not (venv / "libexec" / "nats-server.new").exists()
    # every `make` target runs setup: within the hour the fetch is not tried again (one
    # line, no apt), unless asked for
    again = run(venv, NO_MIRROR)
    assert again.returncode == 1 and again.stderr.count("\n") == 1, again
    assert "its fetch failed less than an hour ago" in again.stderr
    asked = run(venv, {**NO_MIRROR, "RINGTOOL_NATS_FETCH": "1"})
    assert "setup: could not read trixie's index" in asked.stderr, asked.stderr


@pytest.mark.slow
def test_trixies_server_is_fetched_once(tmp_path: Path) -> None:
    """From Debian's archive (the network): 2.10.27 or later in the venv, the host's
    packages and sources as they were; a second run does nothing."""
    before = host_apt_state()
    done = run(tmp_path)
    assert done.returncode == 0, done
    got = version(tmp_path / "libexec" / "nats-server")
    assert not purge_exposed(got), got
    assert done.stdout.endswith(f"in {tmp_path}/libexec\n"), done.stdout
    assert f"nats-server {got} (" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["libexec"]  # no log left
    assert host_apt_state() == before
    again = run(tmp_path, NO_MIRROR)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", ""), again
