"""A fake kernel for perf rings: writes records into bytearrays the way the kernel
lays them out (shared by the perf protocol and lease tests)."""

from __future__ import annotations

import struct

from ringtool.protocol.perf import DATA_HEAD_OFF, DATA_TAIL_OFF, PerfRing


class FakeKernel:
    """Writes perf records the way perf_output_* lays them out (forward mode)."""

    def __init__(self, size: int = 256, start: int = 0) -> None:
        self.page = bytearray(4096)
        self.data = bytearray(size)
        self.size = size
        self.head = start
        struct.pack_into("<QQ", self.page, DATA_HEAD_OFF, start, start)
        self.ring = PerfRing(self.page, self.data, cpu=3)
        self.lost: list[tuple[int, int]] = []
        self.ring.lost_cb = lambda cpu, n: self.lost.append((cpu, n))

    @property
    def tail(self) -> int:
        return int(struct.unpack_from("<Q", self.page, DATA_TAIL_OFF)[0])

    def free(self) -> int:
        return self.size - (self.head - self.tail)

    def put(self, rec: bytes, *, publish: bool = True) -> None:
        assert len(rec) <= self.free()
        for i, b in enumerate(rec):
            self.data[(self.head + i) % self.size] = b
        self.head += len(rec)
        if publish:
            self.publish()

    def publish(self) -> None:
        struct.pack_into("<Q", self.page, DATA_HEAD_OFF, self.head)

    @staticmethod
    def sample_rec(payload: bytes, misc: int = 0) -> bytes:
        raw = (len(payload) + 4 + 7) // 8 * 8 - 4  # the kernel pads raw data to 8
        body = payload.ljust(raw, b"\0")
        return struct.pack("<IHHI", 9, misc, 12 + raw, raw) + body

    @staticmethod
    def lost_rec(lost: int, id_: int = 0xDEAD) -> bytes:
        return struct.pack("<IHHQQ", 2, 0, 24, id_, lost)

    @staticmethod
    def other_rec(typ: int = 3, size: int = 16) -> bytes:
        return struct.pack("<IHH", typ, 0, size) + b"\xee" * (size - 8)
