"""ringtool's attach client against a FAKE bridge (a socket server in this test): every
broken reply gives ``KmesAttachError`` in bounded time, without leaking descriptors or
memory; a reply with 300 CPUs' worth of descriptors in several SCM_RIGHTS messages is
accepted (docs/kmes.md §11.6, §11.9-11.10)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import rawproto as P
from tests.helpers.paths import PY, ROOT

pytestmark = pytest.mark.adversarial

Handler = Callable[[socket.socket, threading.Event], None]
CLIENT_TIMEOUT = 2.0  # the client's own timeout
DEADLINE = 20.0  # the child is killed after this: a hang fails the test


class FakeBridge:
    """Accepts on ``path``; each connection is given to ``handler`` in its own thread."""

    def __init__(self, path: Path, handler: Handler) -> None:
        self.path = str(path)
        self.handler = handler
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(DEADLINE)
            self.handler(conn, self.stop)
        except OSError:
            pass  # the client hung up: expected in most cases here
        except Exception as exc:
            self.errors.append(repr(exc))
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[Callable[[Handler], FakeBridge]]:
    made: list[FakeBridge] = []

    def make(handler: Handler) -> FakeBridge:
        fb = FakeBridge(tmp_path / f"fake{len(made)}.sock", handler)
        made.append(fb)
        return fb

    yield make
    for fb in made:
        fb.close()


def run_client(path: str, mode: str = "fds") -> dict[str, Any]:
    t0 = time.monotonic()
    try:
        res = subprocess.run(
            [PY, "-m", "tests.adversarial.client", path, mode, str(CLIENT_TIMEOUT)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the attach client hung for {DEADLINE} s") from None
    assert res.returncode == 0 and res.stdout, res.stderr[-2000:]
    out: dict[str, Any] = json.loads(res.stdout)
    out["seconds"] = time.monotonic() - t0
    return out


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n") and len(data) < 64:
        chunk = conn.recv(64)
        if not chunk:
            break
        data += chunk
    return data


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def endless_no_newline(conn: socket.socket, stop: threading.Event) -> None:
    read_request(conn)
    conn.sendall(b'{"version": 2, "cpus": [0')
    while not stop.is_set():  # 6.4 MB/s for as long as the client listens
        conn.sendall(b" " * 65536)
        time.sleep(0.01)


def partial_then_silence(conn: socket.socket, stop: threading.Event) -> None:
    read_request(conn)
    conn.sendall(b'{"version": 2, "cpus": [0], "capac')
    stop.wait(DEADLINE)


def nested(depth: int) -> Handler:
    def h(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(b'{"version": 2, "cpus": ' + b"[" * depth + b"]" * depth + b"}\n")
        stop.wait(DEADLINE)

    return h


def reset_after_request(conn: socket.socket, stop: threading.Event) -> None:
    read_request(conn)
    reset(conn)


def reset_at_once(conn: socket.socket, stop: threading.Event) -> None:
    reset(conn)


def reset_mid_line(conn: socket.socket, stop: threading.Event) -> None:
    read_request(conn)
    conn.sendall(b'{"version": 2, "cpus": [0, 1], ')
    time.sleep(0.1)
    reset(conn)


def eof_mid_line(conn: socket.socket, stop: threading.Event) -> None:
    read_request(conn)
    conn.sendall(b'{"version": 2,')


def line(text: bytes, fds_for: int = 0, cap: int = 4096) -> Handler:
    """Send ``text`` (+ ``fds_for`` CPUs' v2 descriptor pairs) and hold the line open."""

    def h(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        fds: list[int] = []
        try:
            for cpu in range(fds_for):
                fds.extend(P.v2_fds(cpu, cap))
            socket.send_fds(conn, [text], fds) if fds else conn.sendall(text)
        finally:
            for fd in fds:
                os.close(fd)
        stop.wait(DEADLINE)

    return h


def v1_reply(conn: socket.socket, stop: threading.Event) -> None:
    """The retired protocol: one read-write fd per CPU, data at offset 4096."""
    read_request(conn)
    fd = os.memfd_create("v1", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, 4096 + 4096)
        os.pwrite(fd, P.metadata_page(0, 4096), 0)
        msg = b'{"version": 1, "cpus": [0], "capacity": 4096, "generation": 1}\n'
        socket.send_fds(conn, [msg], [fd])
    finally:
        os.close(fd)
    stop.wait(DEADLINE)


V2_OK = b'{"version": 2, "cpus": [0, 1], "capacity": 4096, "generation": 1, "fds_per_cpu": 2}\n'
BROKEN: dict[str, Handler] = {
    "endless-no-newline": endless_no_newline,
    "partial-then-silence": partial_then_silence,
    "nested-10k": nested(5_000),
    "nested-400k": nested(200_000),
    "reset-after-request": reset_after_request,
    "reset-at-once": reset_at_once,
    "reset-mid-line": reset_mid_line,
    "eof-mid-line": eof_mid_line,
    "not-an-object": line(b"[1, 2, 3]\n"),
    "a-string": line(b'"ATTACH"\n'),
    "not-json": line(b"\xff\xfe{]\n"),
    "error-reply": line(b'{"error": "go away"}\n'),
    "version-1": v1_reply,
    "version-3": line(V2_OK.replace(b'"version": 2', b'"version": 3'), fds_for=2),
    "version-as-string": line(V2_OK.replace(b'"version": 2', b'"version": "2"'), fds_for=2),
    "fewer-fds-than-cpus": line(V2_OK, fds_for=1),
    "no-fds": line(V2_OK),
    "fds-per-cpu-3": line(V2_OK.replace(b'"fds_per_cpu": 2', b'"fds_per_cpu": 3'), fds_for=2),
    "cpus-not-a-list": line(V2_OK.replace(b"[0, 1]", b'"0,1"'), fds_for=2),
    "cpus-of-strings": line(V2_OK.replace(b"[0, 1]", b'["a", "b"]'), fds_for=2),
    "generation-null": line(V2_OK.replace(b'"generation": 1', b'"generation": null'), fds_for=2),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_reply_is_a_kmes_attach_error(fake: Any, case: str) -> None:
    fb = fake(BROKEN[case])
    for mode in ("fds", "attach"):
        out = run_client(fb.path, mode)
        assert not out["ok"], f"{mode}: accepted a broken reply: {out}"
        assert out["attach_error"], f"{mode}: {out['exc']} instead of KmesAttachError:\n{out['tb']}"
        assert out["leaked_fds"] == 0, f"{mode}: leaked {out['leaked_fds']} descriptors"
        assert out["rss_growth_mb"] < 64, f"{mode}: client grew by {out['rss_growth_mb']} MB"
    assert not fb.errors


def three_hundred_cpus(conn: socket.socket, stop: threading.Event) -> None:
    """The v2 reply for CPUs 0..299: 600 descriptors, at most 253 per SCM_RIGHTS message;
    the line's bytes are spread over the messages, the newline comes with the last."""
    assert read_request(conn) == P.REQUEST
    cpus = list(range(300))
    msg = (
        json.dumps(
            {"version": 2, "cpus": cpus, "capacity": 4096, "generation": 1, "fds_per_cpu": 2}
        ).encode()
        + b"\n"
    )
    fds: list[int] = []
    try:
        for cpu in cpus:
            fds.extend(P.v2_fds(cpu, 4096))
        assert P.send_in_messages(conn, msg, fds, P.SCM_MAX_FD) == 3
    finally:
        for fd in fds:
            os.close(fd)
    stop.wait(DEADLINE)


@pytest.mark.parametrize("mode", ["fds", "attach"])
def test_300_cpus_in_several_scm_rights_messages(fake: Any, mode: str) -> None:
    fb = fake(three_hundred_cpus)
    out = run_client(fb.path, mode)
    assert out["ok"], out.get("tb", out)
    assert out["cpus"] == list(range(300))
    if mode == "fds":
        assert out["nfds"] == 600
    else:
        assert out["capacity"] == [4096] and out["drained"] == 0
    assert out["leaked_fds"] == 0
    assert not fb.errors


def odd_fds(kind: str) -> Handler:
    """A v2 line for CPU 0 whose descriptors are not what docs/kmes.md §11.7 requires."""

    def h(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        meta, data = P.v2_fds(0, 4096)
        extra: list[int] = []
        try:
            if kind == "short-meta":  # a 0-byte metadata file: touching it is SIGBUS
                os.close(meta)
                meta = os.memfd_create("short", os.MFD_CLOEXEC)
            elif kind == "short-data":  # data smaller than "capacity"
                os.close(data)
                data = os.memfd_create("short", os.MFD_CLOEXEC)
                os.ftruncate(data, 1024)
            elif kind == "pipe":  # not a file at all
                os.close(data)
                data, w = os.pipe()
                extra.append(w)
            elif kind == "unsealed-shrunk-later":  # shrinkable, and shrunk once mapped
                os.close(data)
                data = os.memfd_create("unsealed", os.MFD_CLOEXEC)
                os.ftruncate(data, 4096)
            msg = V2_OK.replace(b"[0, 1]", b"[0]")
            socket.send_fds(conn, [msg], [meta, data])
            if kind == "unsealed-shrunk-later":
                time.sleep(0.5)
                os.ftruncate(data, 0)
        finally:
            for fd in (meta, data, *extra):
                os.close(fd)
        stop.wait(DEADLINE)

    return h


@pytest.mark.parametrize("kind", ["short-meta", "short-data", "pipe", "unsealed-shrunk-later"])
def test_descriptors_not_as_promised_are_refused(fake: Any, kind: str) -> None:
    """The client checks what it maps (sizes, kind, seals against shrinking) and refuses
    with a ringtool error, instead of dying of SIGBUS later."""
    fb = fake(odd_fds(kind))
    out = run_client(fb.path, "attach-wait")
    assert not out["ok"], f"accepted: {out}"
    assert out["ringtool_error"], f"{out['exc']}, not a ringtool error:\n{out['tb']}"
    assert out["leaked_fds"] == 0
