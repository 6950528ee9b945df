"""The BPF producer programs of the kernel tests, loaded for real and run in the kernel
with BPF_PROG_TEST_RUN: bpf/ringbuf_test.c (:class:`RingProducer`), bpf/perf_test.c
(:class:`PerfProducer`) and bpf/percpu_ringbuf_test.c over a RingBufGroup
(:class:`GroupProducer`), one class per program."""

from __future__ import annotations

import os
import struct
import threading
from typing import Any

import numpy as np

from ringtool.kernel import bpf
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.programs.loader import compile_program, load_function
from ringtool.readers.ringbuf_group import BPF_INCLUDE_DIR, RingBufGroup
from tests.helpers.cpus import pinned

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
        else:
            run_on(cpu, fd, n)

    def produced(self) -> int:
        """Sequence numbers handed out so far (dropped ones included)."""
        raw = bpf.map_lookup(self.obj[b"seq_counter"].map_fd, b"\0\0\0\0", 8)
        assert raw is not None
        return int(struct.unpack("<Q", raw)[0])

    def close(self) -> None:
        self.obj.cleanup()


def seqs(records: list[bytes]) -> list[int]:
    return [struct.unpack_from("<Q", r)[0] for r in records]


def run_on(cpu: int, fd: int, n: int) -> None:
    """Run the loaded program ``fd`` ``n`` times with this thread pinned to ``cpu``."""
    with pinned({cpu}):
        bpf.prog_test_run(fd, data=PACKET, repeat=n)


#: A bpf/perf_test.c record: seq, cpu, magic.
PERF_EVENT = np.dtype([("seq", "<u8"), ("cpu", "<u4"), ("magic", "<u4")])
PERF_MAGIC = 0x46524550


class PerfProducer:
    """bpf/perf_test.c: ``emit(n, cpu)`` runs its SCHED_CLS program n times on cpu."""

    def __init__(self, pad_words: int = 0) -> None:
        self.obj = compile_program("perf_test.c", defines={"PERF_TEST_PAD_WORDS": pad_words})
        self.fd = load_function(self.obj, "emit", "SCHED_CLS").fd

    @property
    def events(self) -> Any:
        return self.obj[b"events"]

    def emit(self, n: int, cpu: int = 0) -> None:
        run_on(cpu, self.fd, n)

    def _percpu(self, name: bytes, cpu: int) -> int:
        raw = bpf.map_lookup(self.obj[name].map_fd, b"\0\0\0\0", 8 * possible_cpu_count())
        assert raw is not None
        return int(struct.unpack_from("<Q", raw, 8 * cpu)[0])

    def produced(self, cpu: int) -> int:
        return self._percpu(b"seqs", cpu)

    def failed(self, cpu: int) -> int:
        return self._percpu(b"failed", cpu)

    def close(self) -> None:
        self.obj.cleanup()


def decode(data: bytes | memoryview) -> tuple[int, int, int]:
    """A bpf/perf_test.c record's (seq, cpu, magic)."""
    seq, cpu, magic = struct.unpack_from("<QII", data)
    return seq, cpu, magic


#: A bpf/percpu_ringbuf_test.c record: ts, seq, cpu, magic (as one struct, and as the
#: dtype of the batch styles).
GROUP_EVENT = struct.Struct("<QQII")
GROUP_DTYPE = np.dtype([("ts", "<u8"), ("seq", "<u8"), ("cpu", "<u4"), ("magic", "<u4")])
GROUP_MAGIC = 0x50435055


class GroupProducer:
    """bpf/percpu_ringbuf_test.c over ``group`` (its programs ``pcpu_output`` and
    ``pcpu_reserve``); counts per-CPU sequence numbers. :meth:`new` builds the group too
    and closes it with the producer."""

    def __init__(self, group: RingBufGroup, *, owns_group: bool = False) -> None:
        import bcc

        self.group = group
        self._owns_group = owns_group
        src = str(BPF_INCLUDE_DIR / "percpu_ringbuf_test.c").encode()
        self.bpf = bcc.BPF(src_file=src, cflags=group.cflags())
        self.fds = {
            name: self.bpf.load_func(name.encode(), bcc.BPF.SCHED_CLS).fd
            for name in ("pcpu_output", "pcpu_reserve")
        }

    @classmethod
    def new(cls, cpus_per_buffer: int) -> GroupProducer:
        """Over a fresh group of 4 MiB rings, ``cpus_per_buffer`` CPUs each."""
        group = RingBufGroup(cpus_per_buffer=cpus_per_buffer, ring_bytes=1 << 22)
        return cls(group, owns_group=True)

    def emit(self, n: int, cpu: int, prog: str = "pcpu_reserve") -> None:
        run_on(cpu, self.fds[prog], n)

    def run_pinned(self, prog: str, repeat: int, chunks: int = 1) -> None:
        """Run ``prog`` ``repeat * chunks`` times on every CPU, concurrently."""
        errors: list[BaseException] = []

        def work(cpu: int) -> None:
            try:
                os.sched_setaffinity(0, {cpu})
                for _ in range(chunks):
                    bpf.prog_test_run(self.fds[prog], data=PACKET, repeat=repeat)
            except BaseException as exc:  # re-raised in the test
                errors.append(exc)

        cpus = sorted(os.sched_getaffinity(0))
        threads = [threading.Thread(target=work, args=(c,)) for c in cpus]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def produced(self, cpu: int) -> int:
        return int(bpf.percpu_u64(self.bpf[b"pcpu_seq"].map_fd)[cpu])

    def close(self) -> None:
        self.bpf.cleanup()
        if self._owns_group:
            self.group.close()
