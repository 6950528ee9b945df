"""A ``ringtool trace`` held in its start-up, deterministically: its ``--pcap`` is a
FIFO whose pipe is full, so writing the capture's header (before any BPF program is
compiled) blocks until the test empties it (:class:`FullFifo`)."""

from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

from ringtool.event.syscalls import syscall_namer


class FullFifo:
    """A FIFO at ``path`` held open read-write by the test and filled: a writer blocks
    in ``write`` until :meth:`drain` runs (it then reads all that comes until
    :meth:`close`)."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path, 0o600)
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        try:
            while True:
                os.write(self.fd, b"\0" * 4096)
        except BlockingIOError:
            pass
        self.read = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)

    def _drain(self) -> None:
        while not self._done.is_set():
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    self.read += len(os.read(self.fd, 1 << 16))
                except BlockingIOError:
                    pass

    def drain(self) -> None:
        """From now on the pipe is emptied as it fills (a thread)."""
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(10)
        os.close(self.fd)


def wait_blocked_writing(pid: int, timeout: float = 60) -> None:
    """Wait until process ``pid`` sleeps in ``write(2)`` (``/proc/PID/syscall``)."""
    name = syscall_namer()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            nr = (Path("/proc") / str(pid) / "syscall").read_text().split()[0]
        except (OSError, IndexError):
            nr = ""
        if nr.isdigit() and name(int(nr)) == "write":
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not block in write within {timeout} s")


__all__ = ["FullFifo", "wait_blocked_writing"]
