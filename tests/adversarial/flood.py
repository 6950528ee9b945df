"""``python -m tests.adversarial.flood SOCK DIR SECONDS``: flood the attach socket.

For SECONDS, at once: keeps ~300 connections open that never send a byte (re-opened as
the bridge closes them), 20 that sent a partial line (``ATT``), and loops over garbage
requests, 1 MiB lines without a newline, ``ATTACH`` followed by an immediate close or
reset (the reply never read), and bare connect/close. Writes ``DIR/flood.json``:
counters, and ``fds_for_garbage`` (descriptors the bridge handed to a request that was
not ``ATTACH\\n``: must stay 0).
"""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import sys
import threading
import time
from pathlib import Path

SILENT = 300
PARTIAL = 20


class Flood:
    def __init__(self, sock: str, seconds: float) -> None:
        self.sock = sock
        self.end = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def conn(self, timeout: float = 2.0) -> socket.socket | None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.settimeout(timeout)
        try:
            s.connect(self.sock)
            return s
        except OSError:
            self.count("connect_refused")
            s.close()
            return None

    def holders(self, n: int, first: bytes, key: str) -> None:
        """Keep ``n`` connections open that sent ``first`` (maybe nothing) and then
        stay quiet; count the ones the bridge closed."""
        held: list[socket.socket] = []
        while time.monotonic() < self.end:
            while len(held) < n and time.monotonic() < self.end:
                s = self.conn(0.2)
                if s is None:
                    break
                if first:
                    s.sendall(first)
                s.setblocking(False)
                held.append(s)
                self.count(f"{key}_opened")
            keep = []
            for s in held:
                try:
                    got = s.recv(4096)
                except BlockingIOError:
                    keep.append(s)
                    continue
                except OSError:
                    got = b""
                self.count(f"{key}_closed_by_bridge" if not got else f"{key}_answered")
                s.close()
            held = keep
            time.sleep(0.05)
        for s in held:
            s.close()

    def garbage(self) -> None:
        rnd = random.Random(os.getpid())
        while time.monotonic() < self.end:
            kind = rnd.randrange(5)
            s = self.conn()
            if s is None:
                time.sleep(0.01)
                continue
            try:
                if kind == 0:  # garbage bytes, maybe with newlines
                    s.sendall(rnd.randbytes(rnd.randrange(1, 300)) + b"\n")
                    self.read_reply(s)
                elif kind == 1:  # 1 MiB without a newline
                    s.sendall(b"A" * (1 << 20))
                elif kind == 2:  # ask, then vanish without reading the reply
                    s.sendall(b"ATTACH\n")
                elif kind == 3:  # ask, then reset the connection
                    s.sendall(b"ATTACH\n")
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:  # near-miss requests
                    s.sendall(
                        rnd.choice([b"ATTACH\r\n", b"attach\n", b"ATTACH \n", b"\n", b"ATTACH\0\n"])
                    )
                    self.read_reply(s)
                self.count(f"garbage{kind}")
            except OSError:
                self.count(f"garbage{kind}_oserror")
            finally:
                s.close()
            time.sleep(0.003)

    def read_reply(self, s: socket.socket) -> None:
        try:
            _msg, fds, _f, _a = socket.recv_fds(s, 4096, 253)
        except OSError:
            return
        for fd in fds:
            os.close(fd)
        if fds:
            self.count("fds_for_garbage", len(fds))

    def run(self) -> dict[str, int]:
        threads = [
            threading.Thread(target=self.holders, args=(SILENT, b"", "silent")),
            threading.Thread(target=self.holders, args=(PARTIAL, b"ATT", "partial")),
            threading.Thread(target=self.garbage),
            threading.Thread(target=self.garbage),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self.counts


def main(sock: str, dirpath: str, seconds: float) -> None:
    counts = Flood(sock, seconds).run()
    counts.setdefault("fds_for_garbage", 0)
    tmp = Path(dirpath) / "flood.json.tmp"
    tmp.write_text(json.dumps(counts))
    tmp.rename(Path(dirpath) / "flood.json")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
