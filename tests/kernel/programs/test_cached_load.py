"""A cache entry's programs are loaded by one thread per CPU at most: all of them, in
the entry's order, or, when the kernel refuses one, none left open."""

from __future__ import annotations

import os

import pytest

from ringtool.kernel.bpf_load import ProgLoadError
from ringtool.programs.cache_entry import Entry, FuncEntry
from ringtool.programs.cached import PROG_TRACEPOINT, CachedProgram

pytestmark = pytest.mark.kernel

R0_0_EXIT = bytes([0xB7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0])  # r0 = 0; exit
EXIT_ONLY = bytes([0x95, 0, 0, 0, 0, 0, 0, 0])  # r0 never set: the verifier refuses


def _entry(bodies: list[bytes]) -> Entry:
    funcs = tuple(
        FuncEntry(name=f"tracepoint__syscalls__sys_enter_n{i}", prog_type=PROG_TRACEPOINT,
                  attach_type=0, license="GPL", insns=body, relocs=())
        for i, body in enumerate(bodies)
    )  # fmt: skip
    return Entry(source="test.c", functions=funcs, tables=(), btfs=())


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_every_program_is_loaded_in_the_entrys_order() -> None:
    prog = CachedProgram(_entry([R0_0_EXIT] * 9), {})
    try:
        assert [f.name for f in prog.funcs.values()] == [
            f"tracepoint__syscalls__sys_enter_n{i}".encode() for i in range(9)
        ]
        assert len({f.fd for f in prog.funcs.values()}) == 9
    finally:
        prog.cleanup()


@pytest.mark.parametrize("bad", [0, 4, 8])
def test_a_refused_program_leaves_nothing_open(bad: int) -> None:
    bodies = [R0_0_EXIT] * 9
    bodies[bad] = EXIT_ONLY
    before = _open_fds()
    with pytest.raises(ProgLoadError, match=f"sys_enter_n{bad}"):
        CachedProgram(_entry(bodies), {})
    assert _open_fds() == before
