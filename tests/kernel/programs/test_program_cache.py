"""The program cache on the real kernel (docs/trace.md, "Program cache"): a second
start loads the sources from it and sees the same events as a compiled one; another
flag or kernel is a miss; a damaged entry or one the kernel refuses is rebuilt and the
run works; a cache directory another user could change is refused with a clear note
and the trace compiles as before."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ringtool.errors import KernelFeatureError, UnsafeDirectoryError
from ringtool.event.columns import cstr
from ringtool.event.layout import load_layout
from ringtool.programs.cache_entry import MAGIC, DamagedEntry
from ringtool.programs.cache_store import ProgramStore
from ringtool.programs.loader import attach_programs, detach_all
from ringtool.programs.program_cache import load_program
from ringtool.trace.reading.marks import check_user_ringbuf
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.paths import RINGTOOL
from tests.helpers.trace import Worker, drain, hot_file, unique_comm

pytestmark = pytest.mark.kernel
#: The cache's own logic (keys, damage, the directory's checks, --no-cache, doctor)
#: has nothing of the kernel's version in it: host_only. What the kernel does with a
#: cached program (loading it, the same events, the filters' values at run time) runs
#: on every kernel.
HOST_ONLY = pytest.mark.host_only


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own (the session's is shared by every test)."""
    d = tmp_path / "programs"
    monkeypatch.setenv("RINGTOOL_CACHE_DIR", str(d))
    monkeypatch.delenv("RINGTOOL_NO_CACHE", raising=False)
    return d


def run_workload(opts: TraceOptions, target: Path) -> tuple[TraceSession, Counter[Any]]:
    """A session of ``opts`` (closed before returning), a forking and an opening
    worker traced by it; the workers' events without pids, times and fds, counted:
    ``(worker, type, open's path, ret >= 0)``; slow syscalls left out (whether a call
    takes 100 ms depends on the machine's load, not the programs). Read until the
    opener's 40 opens (and with the exec source, the forker's exit) came, or 30 s
    passed: one read may leave a CPU's records for the next."""
    s = TraceSession(opts, load_layout())
    layout = load_layout()
    seen: Counter[Any] = Counter()
    try:
        opener = Worker(unique_comm(), "open", target, 40)
        forker = Worker(unique_comm(), "fork", target, 5)
        names = {opener.name: "opener", forker.name: "forker"}
        opener.go()
        forker.go()
        opener.wait()
        forker.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for e in drain(s):
                who = names.get(cstr(bytes(e["h"]["comm"])))
                kind = layout.type_names[int(e["h"]["type"])]
                if who is not None and kind != "syscall":  # slow calls: as the machine is
                    detail = cstr(bytes(e["data"])) if kind == "open" else ""
                    seen[(who, kind, detail, int(e["ret"]) >= 0)] += 1
            opens = seen[("opener", "open", str(target), True)]
            exited = "exec" not in s.sources or seen[("forker", "exit", "", True)] == 6
            if opens >= 40 and exited:
                break
            time.sleep(0.05)
        drain(s)
    finally:
        s.close()
    return s, seen


def entries(d: Path) -> list[Path]:
    return sorted(d.glob("*.prog"))


def test_a_second_start_loads_from_the_cache_and_sees_the_same_events(
    cache_dir: Path, tmp_path: Path
) -> None:
    target = hot_file(tmp_path)
    opts = TraceOptions()  # the default sources
    first, compiled = run_workload(opts, target)
    assert set(first.origins.values()) == {"compiled"}, first.origins
    assert len(entries(cache_dir)) == len(first.origins)
    second, cached = run_workload(opts, target)
    assert second.origins == {name: "cache" for name in first.origins}, second.notes
    assert not second.notes, second.notes
    assert compiled[("opener", "open", str(target), True)] == 40
    assert compiled[("forker", "fork", "", True)] == 5
    assert cached == compiled
    # the directory is root's only, each entry too
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in entries(cache_dir))


def test_the_filters_values_are_read_at_run_time(cache_dir: Path, tmp_path: Path) -> None:
    """-c with one comm, then -c with another, from one compiled program: the second
    start is a cache hit and its filter passes the second comm's events only."""
    target = hot_file(tmp_path)
    seen = {}
    for round_ in range(2):
        keep, other = Worker(unique_comm(), "open", target, 25), Worker(unique_comm(), "open",
                                                                      target, 25)  # fmt: skip
        s = TraceSession(TraceOptions(events=("open",), comm=keep.name), load_layout())
        try:
            assert s.origins == {"open": "compiled" if round_ == 0 else "cache"}
            keep.go()
            other.go()
            keep.wait()
            other.wait()
            comms: Counter[str] = Counter()
            deadline = time.monotonic() + 30
            while comms[keep.name] < 25 and time.monotonic() < deadline:
                comms.update(cstr(bytes(e["h"]["comm"])) for e in drain(s))
                time.sleep(0.05)
            comms.update(cstr(bytes(e["h"]["comm"])) for e in drain(s))
        finally:
            s.close()
        seen[round_] = (comms[keep.name], comms[other.name])
    assert seen == {0: (25, 0), 1: (25, 0)}


def corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def refused(path: Path) -> None:
    """Rewrite the entry, checksum and all, with programs the verifier refuses (an
    exit that never set r0): well-formed for the cache, refused by the kernel."""
    payload = path.read_bytes().split(b"\n", 2)[2]
    doc = json.loads(payload)
    exit_only = bytes([0x95, 0, 0, 0, 0, 0, 0, 0])
    for f in doc["functions"]:
        f["insns"] = base64.b64encode(exit_only).decode()
        f["relocs"] = []
    payload = json.dumps(doc).encode()
    path.write_bytes(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


@HOST_ONLY
@pytest.mark.parametrize("damage", [corrupt, refused], ids=["checksum", "kernel-refuses"])
def test_a_damaged_entry_is_rebuilt_and_the_run_works(
    cache_dir: Path, tmp_path: Path, damage: Any
) -> None:
    target = hot_file(tmp_path)
    opts = TraceOptions(events=("open",))
    _, compiled = run_workload(opts, target)
    (entry,) = entries(cache_dir)
    damage(entry)
    rebuilt, seen = run_workload(opts, target)
    assert rebuilt.origins == {"open": "compiled"}
    assert any("program cache: " in n and "trace_open.c" in n for n in rebuilt.notes)
    assert seen == compiled
    again, _ = run_workload(opts, target)
    assert again.origins == {"open": "cache"}, again.notes


@HOST_ONLY
def test_another_flag_or_kernel_is_a_miss(cache_dir: Path) -> None:
    """bpf/trace_empty.c (no maps): stored, then found; another -D flag or another
    kernel in the key compiles."""

    def load(store: ProgramStore, defines: dict[str, int | str]) -> bool:
        obj = load_program("trace_empty.c", defines=defines, store=store)
        try:
            attach_programs(obj)
            return bool(getattr(obj, "from_cache", False))
        finally:
            detach_all([obj])

    store = ProgramStore(str(cache_dir))
    assert not load(store, {})
    assert load(store, {})
    assert not load(store, {"RINGTOOL_TEST_FLAG": 1})
    assert not load(ProgramStore(str(cache_dir), kernel="6.0.0-other #1 SMP x86_64"), {})
    assert load(store, {"RINGTOOL_TEST_FLAG": 1})
    store.close()


def unsafe_dirs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Directories the cache must refuse, and why."""
    other = tmp_path / "other-owner"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    wide = tmp_path / "wide"
    wide.mkdir()
    wide.chmod(0o777)
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    return {"owner": (other, "owned by uid 65534"), "mode": (wide, "0777"),
            "symlink": (link, "symbolic link")}  # fmt: skip


@HOST_ONLY
@pytest.mark.parametrize("kind", ["owner", "mode", "symlink"])
def test_an_unsafe_cache_directory_is_refused(tmp_path: Path, kind: str) -> None:
    path, why = unsafe_dirs(tmp_path)[kind]
    with pytest.raises(UnsafeDirectoryError, match=why):
        ProgramStore(str(path)).load("0" * 64)


@HOST_ONLY
def test_a_trace_with_an_unsafe_cache_compiles_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = unsafe_dirs(tmp_path)["mode"]
    monkeypatch.setenv("RINGTOOL_CACHE_DIR", str(path))
    s, seen = run_workload(TraceOptions(events=("open",)), hot_file(tmp_path))
    assert s.origins == {"open": "compiled"}
    (note,) = [n for n in s.notes if "program cache" in n]  # once, not once a source
    assert note.startswith("program cache: not used (refusing") and "0777" in note
    assert seen[("opener", "open", str(hot_file(tmp_path)), True)] == 40, seen
    assert list(path.iterdir()) == []  # nothing written into it


@HOST_ONLY
def test_no_cache_compiles_and_writes_nothing(cache_dir: Path, tmp_path: Path) -> None:
    s, _ = run_workload(TraceOptions(events=("open",), program_cache=False), hot_file(tmp_path))
    assert s.origins == {"open": "compiled"}
    assert not cache_dir.exists()


def doctor_line(env: dict[str, str]) -> str:
    out = subprocess.run([*RINGTOOL, "doctor"], env=env, capture_output=True, text=True,
                         timeout=300).stdout  # fmt: skip
    (line,) = [x for x in out.splitlines() if "program cache" in x]
    return line


@HOST_ONLY
def test_doctor_says_whether_the_cache_is_warm(tmp_path: Path) -> None:
    env = {**os.environ, "RINGTOOL_CACHE_DIR": str(tmp_path / "programs")}
    env.pop("RINGTOOL_NO_CACHE", None)
    assert "cold: no entry for exec, open, syscalls" in doctor_line(env)
    started = subprocess.run([*RINGTOOL, "trace", "--json", "-d", "0.1"], env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "warm for the default sources on this kernel" in doctor_line(env)
    (tmp_path / "programs").chmod(0o755)
    assert "unusable: refusing" in doctor_line(env)
    assert "unusable: turned off" in doctor_line({**env, "RINGTOOL_NO_CACHE": "1"})


@HOST_ONLY
def test_the_marker_drains_object_is_kept_and_a_damaged_one_rebuilt(cache_dir: Path) -> None:
    """clang's object of bpf/trace_mark.bpf.c (``ringtool mark``'s drain) is kept
    beside the entries; a damaged one is compiled again and markers still work."""
    try:
        check_user_ringbuf()
    except KernelFeatureError as exc:
        pytest.skip(str(exc))

    def marks_ready() -> bool:
        s = TraceSession(TraceOptions(events=("open",)), load_layout())
        try:
            return s.marks is not None and not s.notes
        finally:
            s.close()

    assert marks_ready()
    (obj,) = cache_dir.glob("*.o")
    corrupt(obj)
    with pytest.raises(DamagedEntry):
        ProgramStore(str(cache_dir)).load_object(obj.stem)
    assert marks_ready()  # compiled again
    data = ProgramStore(str(cache_dir)).load_object(obj.stem)  # and kept again
    assert data is not None and data.startswith(b"\x7fELF")
    assert marks_ready()  # from the kept object
