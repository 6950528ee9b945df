"""ringtool installed as a user would: a wheel built from this checkout, installed with
its dependencies into a fresh venv outside the checkout, run from another directory
(nothing of the checkout on ``sys.path``). It must find its BPF sources (package data,
ringtool/bpf_files.py), pass ``doctor``, trace, bridge and bench. The editable install
``scripts/setup.sh`` makes (``editable_mode=compat``) must find them in the checkout."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.host_only]


# What a copy of the checkout leaves out: VCS data, venvs, build and test leftovers.
_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".vagrant", "out"
)
PIP_TIMEOUT = 900  # a cold pip cache downloads the dependencies


@dataclass(frozen=True)
class Install:
    """A venv with ringtool installed, and a directory outside any checkout to run in."""

    venv: Path
    cwd: Path

    @property
    def ringtool(self) -> Path:
        return self.venv / "bin" / "ringtool"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.ringtool), *args], cwd=self.cwd, env=clean_env(),
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """``ringtool ARGS`` started, stdout discarded, stderr a pipe."""
        return subprocess.Popen([str(self.ringtool), *args], cwd=self.cwd, env=clean_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip


def clean_env() -> dict[str, str]:
    """This environment without what would put the checkout on ``sys.path``."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def check(argv: list[str], cwd: Path) -> None:
    done = subprocess.run(argv, cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=PIP_TIMEOUT)  # fmt: skip
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-3000:]}"


def read_until(proc: subprocess.Popen[bytes], text: str, timeout: float) -> str:
    """``proc``'s stderr until a line holds ``text`` (or it ends, or ``timeout`` s)."""
    assert proc.stderr is not None
    fd, got = proc.stderr.fileno(), b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        chunk = os.read(fd, 65536) if ready else b""
        got += chunk
        if not chunk or (text and text.encode() in got and got.endswith(b"\n")):
            break
    return got.decode(errors="replace")


def copy_checkout(dest: Path) -> Path:
    shutil.copytree(ROOT, dest, ignore=_IGNORE, symlinks=True)
    return dest


def fresh_venv(path: Path) -> Path:
    """A venv from Debian's python3 with the system site packages (BCC is there only)."""
    check(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(path)], path.parent)
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    src = copy_checkout(base / "src")
    check([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"),
           str(src)], base)  # fmt: skip
    (built,) = (base / "dist").glob("ringtool-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Install:
    base = tmp_path_factory.mktemp("installed")
    venv = fresh_venv(base / "venv")
    check([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], base)
    (base / "elsewhere").mkdir()
    return Install(venv, base / "elsewhere")


def test_the_wheel_carries_the_bpf_sources_and_bench_c_helpers(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = sorted(p.name for p in (ROOT / "bpf").iterdir() if p.suffix in (".c", ".h"))
    assert sources and {f"ringtool/bpf/{n}" for n in sources} <= names
    helpers = sorted(p.name for p in (ROOT / "ringtool" / "bench" / "csrc").glob("*.c"))
    assert helpers and {f"ringtool/bench/csrc/{n}" for n in helpers} <= names


def test_installed_ringtool_is_the_wheel_and_doctor_finds_its_sources(installed: Install) -> None:
    site = installed.venv / "lib"
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c",
         "import ringtool, ringtool.bpf_files as b; print(ringtool.__file__); print(b.bpf_dir())"],
        cwd=installed.cwd, env=clean_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    module, bpf_dir = where.stdout.split()
    assert Path(module).is_relative_to(site) and Path(bpf_dir).is_relative_to(site)
    assert Path(bpf_dir).name == "bpf" and Path(bpf_dir).parent.name == "ringtool"
    done = installed.run("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(ln for ln in done.stdout.splitlines() if "BPF sources" in ln)
    assert line.lstrip().startswith("✓") and bpf_dir in line, line


def test_installed_trace_sees_an_open_by_a_test_process(installed: Install) -> None:
    target = installed.cwd / "wheel-opened.txt"
    target.write_text("x\n")
    opener = subprocess.Popen(
        ["/usr/bin/python3", "-c",
         "import sys, time\nwhile True:\n    open(sys.argv[1]).close()\n    time.sleep(0.05)",
         str(target)],
    )  # fmt: skip
    try:
        done = installed.run("trace", "--json", "-d", "2", timeout=180)  # every source
    finally:
        opener.kill()
        opener.wait()
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()  # events, then the summary; the start line: stderr
    told = [json.loads(ln) for ln in done.stderr.splitlines() if ln.startswith("{")]
    start, summary = told[0], json.loads(lines[-1])
    assert start["type"] == "start" and summary["type"] == "summary"
    assert {"exec", "open", "syscalls"} <= set(start["sources"]), start
    mine = [json.loads(ln) for ln in lines if str(target) in ln]  # a busy host: many lines
    mine = [o for o in mine if o["type"] == "open" and o["pid"] == opener.pid]
    assert mine and all(o["ret"] >= 0 for o in mine), mine[:3]


def test_installed_bridge_serves_kmes_read(installed: Install) -> None:
    sock, conf = installed.cwd / "kmes.sock", installed.cwd / "kmes.conf"
    conf.write_text("capacity = 1048576\n")
    exe = installed.cwd / "wheelexec"  # its exec events carry this comm
    shutil.copy("/bin/true", exe)
    bridge = installed.popen("bridge", "--socket", str(sock), "--config", str(conf),
                             "--events", "exec")  # fmt: skip
    err = ""
    try:
        err = read_until(bridge, "serving", 120)
        assert "serving" in err, f"the bridge did not start: {err}"
        for _ in range(3):
            subprocess.run([str(exe)], check=True)
        read = installed.run("kmes-read", "--socket", str(sock), "--json")
        assert read.returncode == 0, read.stderr
        events = [json.loads(line) for line in read.stdout.splitlines() if line.strip()]
        comms = [(e.get("data") or {}).get("comm") for e in events if e.get("name") == "exec"]
        assert comms.count("wheelexec") == 3, events[-10:]
    finally:
        bridge.send_signal(signal.SIGINT)
        try:
            bridge.wait(30)
        except subprocess.TimeoutExpired:
            bridge.kill()
            bridge.wait()
    err += read_until(bridge, "", 5)
    assert bridge.returncode == 0, err
    assert "Traceback" not in err, err


def test_installed_bench_ringbuf_quick(installed: Install) -> None:
    done = installed.run("bench", "ringbuf", "--quick", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    consumers = {r.get("consumer") for r in rows}
    assert "libbpf-c" in consumers  # built from the wheel's ringtool/bench/csrc
    assert any(r["bench"] == "ringbuf-sustained" and r["consumed"] > 0 for r in rows), rows


def test_editable_compat_install_finds_the_checkouts_bpf(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    base = tmp_path_factory.mktemp("editable")
    src = copy_checkout(base / "src")
    venv = fresh_venv(base / "venv")
    check([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--config-settings",
           "editable_mode=compat", "-e", str(src)], base)  # fmt: skip
    (base / "elsewhere").mkdir()
    done = Install(venv, base / "elsewhere").run("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(ln for ln in done.stdout.splitlines() if "BPF sources" in ln)
    assert line.lstrip().startswith("✓") and f"{src / 'bpf'} (" in line, line


def test_an_install_without_its_bpf_sources_says_so_in_one_line(installed: Install) -> None:
    """Runs last in this module: it hides the installed sources, then puts them back."""
    found = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c",
         "import ringtool.bpf_files as b; print(b.bpf_dir())"],
        cwd=installed.cwd, env=clean_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    sources = Path(found.stdout.strip())
    hidden = sources.with_name("bpf-hidden")
    sources.rename(hidden)
    try:
        doctor = installed.run("doctor")
        trace = installed.run("trace", "--json", "-d", "1")
        bridge = installed.run("bridge", "-d", "1", "--socket", str(installed.cwd / "k.sock"))
    finally:
        hidden.rename(sources)
    assert doctor.returncode == 1
    line = next(ln for ln in doctor.stdout.splitlines() if "BPF sources" in ln)
    assert line.lstrip().startswith("✗") and str(sources) in line, line
    for done, name in ((trace, "trace"), (bridge, "bridge")):
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"ringtool {name}: the BPF sources"), done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
