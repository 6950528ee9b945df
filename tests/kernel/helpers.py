"""Real-kernel test helpers: the test producer program of bpf/ringbuf_test.c."""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from ringtool.kernel import bpf
from ringtool.programs.loader import compile_program, load_function

TEST_EVENT = np.dtype([("seq", "<u8"), ("ts", "<u8"), ("cpu", "<u4"), ("magic", "<u4")])
MAGIC = 0x52494E47
PACKET = b"\0" * 64


class RingProducer:
    """bpf/ringbuf_test.c compiled with a ring of ``pages`` pages; ``emit(n)`` runs
    one of its SCHED_CLS programs n times in the kernel (BPF_PROG_TEST_RUN)."""

    def __init__(self, pages: int = 64, *, output_flags: int = 0) -> None:
        self.obj = compile_program(
            "ringbuf_test.c",
            defines={"RINGTOOL_RING_PAGES": pages, "RINGTOOL_OUTPUT_FLAGS": output_flags},
        )
        self._fds: dict[str, int] = {}

    @property
    def events(self) -> Any:
        return self.obj[b"events"]

    def emit(self, n: int, program: str = "emit_reserve", *, cpu: int | None = None) -> None:
        fd = self._fds.get(program)
        if fd is None:
            fd = self._fds[program] = load_function(self.obj, program, "SCHED_CLS").fd
        if cpu is None:
            bpf.prog_test_run(fd, data=PACKET, repeat=n)
            return
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
        try:
            bpf.prog_test_run(fd, data=PACKET, repeat=n)
        finally:
            os.sched_setaffinity(0, old)

    def produced(self) -> int:
        """Sequence numbers handed out so far (dropped ones included)."""
        raw = bpf.map_lookup(self.obj[b"seq_counter"].map_fd, b"\0\0\0\0", 8)
        assert raw is not None
        return int(struct.unpack("<Q", raw)[0])

    def close(self) -> None:
        self.obj.cleanup()


def seqs(records: list[bytes]) -> list[int]:
    return [struct.unpack_from("<Q", r)[0] for r in records]
