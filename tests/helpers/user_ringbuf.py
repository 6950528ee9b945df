"""bpf/user_ringbuf_test.bpf.c loaded into a throwaway bpffs directory: a BPF program
that drains a USER_RINGBUF when the test runs it (BPF_PROG_TEST_RUN), copying every
sample into a RINGBUF the test reads back."""

from __future__ import annotations

import os
import shutil
import struct
import uuid

from ringtool.kernel import bpf
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.programs.clang_loader import load_pinned
from ringtool.readers.ringbuf import RingBuffer

COPY_MAX = 256  # URB_COPY_MAX of the program
_COPY = struct.Struct("<Ii")  # struct urb_copy: len, err, then data[COPY_MAX]


class UrbDrainer:
    """The user ring (``urb_fd``) and its BPF consumer; ``drain()`` runs it once."""

    def __init__(self, ring_bytes: int = PAGE_SIZE) -> None:
        self.pin_dir = f"/sys/fs/bpf/ringtool-test-{uuid.uuid4().hex[:12]}"
        os.mkdir(self.pin_dir)
        self.fds: list[int] = []
        try:
            prog = load_pinned(
                "user_ringbuf_test.bpf.c", self.pin_dir, defines={"URB_BYTES": ring_bytes}
            )
            self.prog_fd = self._get(prog)
            self.urb_fd = self._get(f"{self.pin_dir}/urb")
            self.result_fd = self._get(f"{self.pin_dir}/result")
            self.out = RingBuffer(self._get(f"{self.pin_dir}/out"), self._collect)
        except BaseException:
            self.close()
            raise
        self.ring_bytes = ring_bytes
        self._got: list[tuple[int, int, bytes]] = []

    def _get(self, path: str) -> int:
        fd = bpf.obj_get(path)
        self.fds.append(fd)
        return fd

    def _collect(self, data: memoryview) -> None:
        length, err = _COPY.unpack_from(data, 0)
        n = min(length, COPY_MAX)
        self._got.append((length, err, bytes(data[_COPY.size : _COPY.size + n])))

    def result(self, key: int) -> int:
        raw = bpf.map_lookup(self.result_fd, key.to_bytes(4, "little"), 8)
        assert raw is not None
        return int.from_bytes(raw, "little", signed=True)

    def drain(self) -> tuple[int, list[bytes]]:
        """Run the BPF consumer once: (bpf_user_ringbuf_drain's return value, the
        samples it handed the callback, each whole)."""
        bpf.prog_test_run_raw_tp(self.prog_fd)
        self._got = []
        self.out.consume()
        for length, err, _ in self._got:
            assert err == 0, f"bpf_dynptr_read of a {length}-byte sample: {err}"
        return self.result(0), [data for _, _, data in self._got]

    def consumer_pos(self) -> int:
        m = map_shared(self.urb_fd, PAGE_SIZE, offset=0, writable=False, what="consumer page")
        try:
            return int.from_bytes(m[:8], "little")
        finally:
            m.close()

    def poke(self, offset: int, raw: bytes) -> None:
        """Write ``raw`` at data offset ``offset`` by hand (a producer gone wrong)."""
        m = map_shared(
            self.urb_fd, PAGE_SIZE + 2 * self.ring_bytes, offset=PAGE_SIZE, writable=True,
            what="producer page",
        )  # fmt: skip
        try:
            m[PAGE_SIZE + offset : PAGE_SIZE + offset + len(raw)] = raw
        finally:
            m.close()

    def close(self) -> None:
        if getattr(self, "out", None) is not None:
            self.out.close()
        for fd in self.fds:
            bpf.close_fd(fd)
        shutil.rmtree(self.pin_dir, ignore_errors=True)


def sample(seq: int, length: int) -> bytes:
    """A test sample: its length (u32), then bytes that depend on seq and offset."""
    assert 8 <= length <= COPY_MAX
    body = bytes((seq * 7 + i) & 0xFF for i in range(length - 8))
    return struct.pack("<II", length, seq) + body
