"""bpf/ringbuf_overwrite_test.c loaded for real: a RINGBUF in overwrite mode that its
SCHED_CLS program fills (BPF_PROG_TEST_RUN), and the check of what a reader got."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from ringtool.kernel import bpf
from ringtool.kernel.ringbuf_map import has_ringbuf_overwrite
from ringtool.programs.loader import compile_program, load_function
from tests.helpers.producers import PACKET

FILL = 56  # RINGTOOL_OW_FILL: struct ow_event is 8 + 56 = 64 bytes
SPAN = 72  # its record span: header + payload, to 8


def need_overwrite() -> None:
    """Skip, saying why, where the kernel refuses BPF_F_RB_OVERWRITE (Linux < 6.19)."""
    if not has_ringbuf_overwrite():
        pytest.skip("this kernel refuses BPF_F_RB_OVERWRITE (RINGBUF overwrite mode: 6.19+)")


def expected(seq: int) -> bytes:
    return struct.pack("<Q", seq) + bytes((seq * 31 + i * 7) & 0xFF for i in range(FILL))


def seq_checked(data: bytes | memoryview) -> int:
    """The record's sequence number; fails on a torn record (content from two events)."""
    seq = int(struct.unpack_from("<Q", data)[0])
    assert bytes(data) == expected(seq), f"record {seq} delivered torn"
    return seq


class OverwriteProducer:
    """The program with a ring of ``pages`` pages; ``emit(n)`` runs it n times."""

    def __init__(self, pages: int = 1) -> None:
        self.obj = compile_program(
            "ringbuf_overwrite_test.c", defines={"RINGTOOL_RING_PAGES": pages}
        )
        self._fd = load_function(self.obj, "emit_fill", "SCHED_CLS").fd

    @property
    def events(self) -> Any:
        return self.obj[b"events"]

    def emit(self, n: int) -> None:
        bpf.prog_test_run(self._fd, data=PACKET, repeat=n)

    def _u64(self, name: bytes) -> int:
        raw = bpf.map_lookup(self.obj[name].map_fd, b"\0\0\0\0", 8)
        assert raw is not None
        return int(struct.unpack("<Q", raw)[0])

    def produced(self) -> int:
        return self._u64(b"seq_counter")

    def failed(self) -> int:
        return self._u64(b"failed")

    def close(self) -> None:
        self.obj.cleanup()
