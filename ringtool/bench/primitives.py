"""``ringtool bench primitives``: what each building block of a trace program costs
on this machine, per run, from the kernel's BPF run-time statistics.

``bpf/bench_primitives.c`` holds one program per block (:data:`PRIMITIVES`). The
producer (``csrc/syscall_loop.c``, :mod:`ringtool.bench.trace_proc`) makes ``openat``
+ ``close`` calls pinned to CPU 0; each program in turn is attached to
``syscalls:sys_enter_openat`` for one slice with the statistics on
(``BPF_ENABLE_STATS``), and its ns per run is Δ``run_time_ns`` / Δ``run_cnt`` over
the slice. ``repeats`` alternating rounds; per block the median, its range, and
``added_ns`` = median − the ``empty`` program's median.

The statistics put two clock reads around every run, and calling a program costs
too, so ``empty`` is not 0: a block's ``added_ns`` is what it adds to every event. It
depends on the CPU and its mitigations (return thunks and retpolines make every
helper call dearer), which is why it is measured rather than quoted. The trace
sources are made of these blocks (``bpf/trace_open.c``, ``bpf/trace_syscalls.c``):
the figures read the per-program times of ``ringtool trace``'s cost panel and the
``trace-overhead`` row of ``ringtool bench trace``. The ``task_btf`` and
``task_storage`` blocks need kernel BTF and per-task storage for tracing programs
(Linux 5.13+); elsewhere their rows say ``skipped``.

The ``ringbuf`` block's records are read by a thread with ringtool's
:class:`~ringtool.readers.ringbuf.RingBuffer` while it runs, and its program counts
the reservations that failed (a failed one would make the block look cheaper): its
row has ``records``, ``reserve_failed`` and ``unaccounted`` = runs − records −
failed, which is 0 when every run is accounted for.

Rows: ``{"bench": "bpf-primitive", "primitive": ..., "does": ..., "ns_per_run": x,
"added_ns": x - empty, "min_ns": ..., "max_ns": ..., "runs": N}``. Only numbers;
nothing here is asserted.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ringtool.bench.trace_proc import build_loop, run_loop
from ringtool.errors import BenchError
from ringtool.event.layout import load_layout
from ringtool.kernel import bpf_stats
from ringtool.kernel.privileges import require_bpf_privileges
from ringtool.programs.kernel_features import has_task_storage
from ringtool.programs.loader import BpfCompileError, compile_program, load_function
from ringtool.programs.tracepoints import TracepointFormatError, parse_format, read_format
from ringtool.readers.ringbuf import RingBuffer

if TYPE_CHECKING:
    import numpy as np

#: block -> what its program does (``prim_<block>`` in bpf/bench_primitives.c)
PRIMITIVES: dict[str, str] = {
    "empty": "nothing: the baseline (a program run and the statistics' clock reads)",
    "helper": "one helper call that does almost nothing (bpf_get_current_pid_tgid)",
    "task_btf": "the current task's BTF pointer (bpf_get_current_task_btf)",
    "ktime": "the clock (bpf_ktime_get_ns)",
    "task_storage": "task pointer + per-task storage (bpf_task_storage_get)",
    "hash_tid": "tid + hash lookup keyed by it (update on a miss)",
    "array": "array lookup (inlined by the verifier) + atomic add",
    "user_str": "the path from user memory (bpf_probe_read_user_str)",
    "ringbuf": "ring buffer reserve + submit of one trace record",
    "comm_helper": "the comm by helper (bpf_get_current_comm)",
}
#: the blocks that need kernel BTF and per-task storage for tracing programs
NEED_TASK_STORAGE = ("task_btf", "task_storage")
SKIPPED = "needs kernel BTF and per-task storage for tracing programs (Linux 5.13+)"
CATEGORY, EVENT = "syscalls", "sys_enter_openat"
PRODUCER_CPU = 0
DRAIN_CPU = 1


def filename_offset() -> int:
    """The offset of the ``filename`` field in ``syscalls:sys_enter_openat``'s record
    (tracefs); a :class:`TracepointFormatError` when the kernel lacks it."""
    field = parse_format(read_format(CATEGORY, EVENT)).get("filename")
    if field is None:
        raise TracepointFormatError(f"{CATEGORY}:{EVENT} has no filename field")
    return field.offset


class _Drain:
    """A thread reading the ``records`` ring while the ``ringbuf`` block runs; after
    :meth:`stop`, :attr:`records` is every record the block submitted until then. An
    error of the thread's read is raised by :meth:`stop`."""

    def __init__(self, ring: RingBuffer, record: np.dtype[Any]) -> None:
        self._ring, self._record = ring, record
        self._stop = threading.Event()
        self._error: Exception | None = None
        self.records = 0
        self._thread = threading.Thread(target=self._run, name="primitives-drain", daemon=True)
        self._thread.start()

    def _read(self) -> int:
        n = len(self._ring.read_batch(self._record))
        self.records += n
        return n

    def _run(self) -> None:
        if (os.cpu_count() or 1) > DRAIN_CPU:
            with contextlib.suppress(OSError):  # this thread only: off the producer's CPU
                os.sched_setaffinity(0, {DRAIN_CPU})
        try:
            while not self._stop.is_set():
                if not self._read():
                    self._stop.wait(0.001)
        except Exception as exc:  # raised again in the bench's thread by stop()
            self._error = exc

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise self._error
        while self._read():
            pass
        return self.records


class _Bench:
    """The compiled blocks, attached one at a time while the producer runs (``only``:
    these blocks and ``empty``, else every block the kernel has)."""

    def __init__(self, binary: Path, slice_s: float, only: Sequence[str] | None = None) -> None:
        self.binary, self.slice_s = binary, slice_s
        have = has_task_storage()
        self.blocks = [n for n in PRIMITIVES if (have or n not in NEED_TASK_STORAGE)
                       and (only is None or n == "empty" or n in only)]  # fmt: skip
        self.obj = compile_program("bench_primitives.c", defines={
            "PRIM_FILENAME_OFF": filename_offset(), "PRIM_HAVE_TASK_STORAGE": int(have),
        })  # fmt: skip
        self.fds = {n: load_function(self.obj, f"prim_{n}", "TRACEPOINT").fd for n in self.blocks}
        self.ring = RingBuffer(self.obj[b"records"])
        self.record = load_layout().event
        self.records = 0  # read from the ring while the ringbuf block ran

    def close(self) -> None:
        self.ring.close()
        self.obj.cleanup()

    def reserve_failed(self) -> int:
        """The ringbuf block's failed reservations so far (all CPUs)."""
        return int(self.obj[b"reserve_failed"].sum(0).value)

    def measure(self, name: str) -> tuple[float, int]:
        """One slice of block ``name``: (ns per run, runs). A :class:`BenchError` when
        the program did not run at all; a BpfCompileError when it cannot attach."""
        tp = f"{CATEGORY}:{EVENT}".encode()
        before = bpf_stats.prog_run_stats(self.fds[name])
        try:
            self.obj.attach_tracepoint(tp=tp, fn_name=f"prim_{name}".encode())
        except Exception as exc:  # BCC raises bare Exception
            raise BpfCompileError(
                f"could not attach prim_{name} to {CATEGORY}:{EVENT}: {exc}"
            ) from exc
        drain = _Drain(self.ring, self.record) if name == "ringbuf" else None
        try:
            run_loop(self.binary, "open", PRODUCER_CPU, self.slice_s)
        except BaseException:
            self.obj.detach_tracepoint(tp)
            if drain:
                with contextlib.suppress(Exception):  # the loop's error is the one to tell
                    drain.stop()
            raise
        self.obj.detach_tracepoint(tp)  # returns once no run of it is left
        after = bpf_stats.prog_run_stats(self.fds[name])
        self.records += drain.stop() if drain else 0
        runs = after.run_cnt - before.run_cnt
        if runs == 0:
            raise BenchError(f"prim_{name} never ran in its {self.slice_s} s on {CATEGORY}:"
                             f"{EVENT} while the producer opened files")  # fmt: skip
        return (after.run_time_ns - before.run_time_ns) / runs, runs


def run(*, repeats: int, quick: bool, only: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every block in ``repeats`` alternating rounds (see the module doc); ``only``: just
    these blocks and ``empty`` (their rows alone, in :data:`PRIMITIVES`' order)."""
    require_bpf_privileges("ringtool bench primitives")
    with bpf_stats.enable():  # fails now, before any compile, where they cannot be had
        pass
    times: dict[str, list[float]] = {n: [] for n in PRIMITIVES}
    runs = dict.fromkeys(PRIMITIVES, 0)
    with tempfile.TemporaryDirectory(prefix="ringtool-bench-prim-") as d:
        bench = _Bench(build_loop(Path(d)), 0.2 if quick else 0.5, only)
        try:
            with bpf_stats.enable():  # on for the measurements only (every program pays)
                for _ in range(repeats):
                    for name in bench.blocks:
                        ns, n = bench.measure(name)
                        times[name].append(ns)
                        runs[name] += n
            failed = bench.reserve_failed() if "ringbuf" in bench.blocks else 0
        finally:
            bench.close()
    base = statistics.median(times["empty"])
    rows: list[dict[str, Any]] = []
    for name, does in PRIMITIVES.items():
        row: dict[str, Any] = {"bench": "bpf-primitive", "primitive": name, "does": does}
        if only is not None and name != "empty" and name not in only:
            continue
        if not times[name]:
            rows.append(row | {"skipped": SKIPPED})
            continue
        med = statistics.median(times[name])
        row |= {"ns_per_run": round(med, 1), "added_ns": round(med - base, 1),
                "min_ns": round(min(times[name]), 1), "max_ns": round(max(times[name]), 1),
                "runs": runs[name]}  # fmt: skip
        if name == "ringbuf":  # every run submitted a record or counted a failure
            row |= {"records": bench.records, "reserve_failed": failed,
                    "unaccounted": runs[name] - bench.records - failed}  # fmt: skip
        rows.append(row)
    return rows


def added_ns(blocks: Sequence[str], *, repeats: int, quick: bool) -> dict[str, float]:
    """Block -> its ``added_ns`` (:func:`run` of ``blocks`` only: the same measurement,
    the empty program measured beside them); a block the kernel lacks is left out."""
    rows = run(repeats=repeats, quick=quick, only=blocks)
    return {r["primitive"]: float(r["added_ns"]) for r in rows
            if r["primitive"] in blocks and "added_ns" in r}  # fmt: skip


__all__ = ["PRIMITIVES", "added_ns", "filename_offset", "run"]
