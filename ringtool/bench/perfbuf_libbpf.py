"""libbpf's C perf buffer consumer as a drain of ``ringtool bench perfbuf``:
``csrc/libbpf_perf_drain.c`` built with ``cc -lbpf`` (Debian's libbpf-dev), run as a
helper process that inherits the map fd and opens its own perf event for one CPU
(``perf_buffer__new_raw``); each :meth:`~ringtool.bench.libbpf_drain.LibbpfDrain.drain`
runs ``perf_buffer__consume`` once, timed in C (the pipe round trip is not counted)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ringtool.bench.cbuild import build_c
from ringtool.bench.libbpf_drain import LibbpfDrain
from ringtool.errors import BenchError


def build(directory: Path) -> Path:
    """The helper's executable, built into ``directory`` (:class:`BenchError` when
    the compiler or libbpf-dev is missing)."""
    return build_c("libbpf_perf_drain.c", directory / "libbpf_perf_drain", ("-lbpf",))


class LibbpfPerfDrain(LibbpfDrain):
    """The helper ``binary`` reading CPU ``cpu``'s slot of ``map_fd`` (``page_cnt``
    data pages); ready (its perf event's fd stored in the map) once constructed.
    ``drain()`` and ``close()`` as for the RINGBUF helper; closing it deletes the
    map slot (libbpf's perf_buffer__free)."""

    def __init__(self, binary: Path, map_fd: int, page_cnt: int, cpu: int) -> None:
        self.proc = subprocess.Popen([str(binary), str(map_fd), str(page_cnt), str(cpu)],
                                     pass_fds=[map_fd], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)  # fmt: skip
        assert self.proc.stdout is not None
        if self.proc.stdout.readline() != "ready\n":
            err = self.proc.stderr.read() if self.proc.stderr is not None else ""
            self.close()
            raise BenchError(f"libbpf_perf_drain: {err.strip() or 'exited'}")


__all__ = ["LibbpfPerfDrain", "build"]
