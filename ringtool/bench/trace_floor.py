"""The floor of ``ringtool bench trace``'s ``trace-overhead`` row: what every event of
its producer's ``openat`` + ``close`` loop needs in the kernel whatever the programs
are made of, from ``ringtool bench primitives``' blocks measured in the same run
(:func:`ringtool.bench.primitives.added_ns`: the same programs, slices and empty
baseline; docs/benchmarks.md, "What the programs are made of").

Per syscall of the loop (two a loop iteration, one of them an ``openat``):

* the two clock reads of its latency (``raw_syscalls`` ``sys_enter`` and
  ``sys_exit``): ``2 × ktime``;
* per ``openat``, so half of it per syscall, the path read from user memory and the
  open event's timestamp: ``(user_str + ktime) / 2``;

the blocks' ``added_ns`` scaled by :data:`BLOCK_SCALE`: a block measured alone costs
about a third more than inside a program (the default sources' blocks added up to
406 ns per syscall where the programs measured 304), so

``floor_ns = 0.75 × (2 × ktime + (user_str + ktime) / 2)``

and ``floor_ratio = above_empty_ns / floor_ns``, where ``above_empty_ns`` is the
default trace's added ns per syscall over the empty programs' (``traced_added_ns`` −
``empty_added_ns``: the programs' work, without what running any program on those
tracepoints costs, which the blocks' ``added_ns`` leave out too, being over the empty
program's): 1 would be programs that do nothing but what every event needs; the
target is at most 1.25. The empty programs are on the tracepoints the default sources
attach to (``bpf/trace_empty.c``), which those of the floor's reads are."""

from __future__ import annotations

from ringtool.bench.primitives import added_ns

#: The blocks the floor is made of (:data:`ringtool.bench.primitives.PRIMITIVES`).
FLOOR_BLOCKS = ("ktime", "user_str")
#: A block inside a program costs about this share of its cost alone.
BLOCK_SCALE = 0.75
#: Rounds of the blocks (alternating, as ``bench primitives``' repeats).
FLOOR_ROUNDS = 3


def floor_ns(ktime_ns: float, user_str_ns: float) -> float:
    """The floor per syscall (see the module doc) from the blocks' added ns."""
    return BLOCK_SCALE * (2 * ktime_ns + (user_str_ns + ktime_ns) / 2)


def floor_fields(blocks: dict[str, float], above_empty_ns: float) -> dict[str, float | None]:
    """The row's floor fields from the blocks' added ns (``blocks``: ``ktime`` and
    ``user_str``) and the default trace's ns per syscall above the empty programs';
    ``floor_ratio`` is None when the floor is not positive (blocks lost in the
    noise)."""
    ktime, user_str = blocks["ktime"], blocks["user_str"]
    floor = floor_ns(ktime, user_str)
    return {
        "above_empty_ns": round(above_empty_ns, 1),
        "floor_ktime_ns": round(ktime, 1), "floor_user_str_ns": round(user_str, 1),
        "floor_scale": BLOCK_SCALE, "floor_ns": round(floor, 1),
        "floor_ratio": round(above_empty_ns / floor, 2) if floor > 0 else None,
    }  # fmt: skip


def measure_floor(*, quick: bool) -> dict[str, float]:
    """The floor's blocks measured now (:data:`FLOOR_ROUNDS` rounds): block -> added ns."""
    return added_ns(FLOOR_BLOCKS, repeats=FLOOR_ROUNDS, quick=quick)


__all__ = ["BLOCK_SCALE", "FLOOR_BLOCKS", "floor_fields", "floor_ns", "measure_floor"]
