"""libbpf's C consumer as a drain of ``ringtool bench ringbuf``: ``csrc/libbpf_drain.c``
built with ``cc -lbpf`` (Debian's libbpf-dev) and run as a helper process that
inherits the map fd; each :meth:`LibbpfDrain.drain` makes it run
``ring_buffer__consume`` once and report the records and the nanoseconds that call
took (timed in C: the pipe round trip is not counted)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ringtool.bench.cbuild import build_c
from ringtool.errors import BenchError


class LibbpfDrain:
    """The helper over ``map_fd``, built into ``directory``; :meth:`close` ends it."""

    def __init__(self, map_fd: int, directory: Path) -> None:
        binary = build_c("libbpf_drain.c", directory / "libbpf_drain", ("-lbpf",))
        self.proc = subprocess.Popen([str(binary), str(map_fd)], pass_fds=[map_fd],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip

    def drain(self) -> tuple[int, int]:
        """One ``ring_buffer__consume``: ``(records, ns)``; :class:`BenchError` when the
        helper failed."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr is not None else ""
            raise BenchError(f"libbpf_drain: {err.strip() or 'exited'}")
        records, ns, _ = (int(x) for x in line.split())
        return records, ns

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


__all__ = ["LibbpfDrain"]
