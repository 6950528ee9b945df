"""A cache entry's programs are loaded by one thread per CPU at most: all of them, in
the entry's order, or, when the kernel refuses one, none left open. Byte-identical
functions are loaded once: their one program is attached to each one's tracepoint."""

from __future__ import annotations

import os

import pytest

from ringtool.kernel.bpf_load import ProgLoadError
from ringtool.kernel.task_fd_query import attached_events
from ringtool.programs.cache_entry import Entry, FuncEntry
from ringtool.programs.cached import PROG_TRACEPOINT, CachedProgram
from ringtool.trace.reading.cost import program_fds

pytestmark = pytest.mark.kernel

R0_0_EXIT = bytes([0xB7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0])  # r0 = 0; exit
EXIT_ONLY = bytes([0x95, 0, 0, 0, 0, 0, 0, 0])  # r0 never set: the verifier refuses


def _r0_exit(value: int) -> bytes:
    """``r0 = value; exit``: a program the verifier accepts, its bytes ``value``'s."""
    return bytes([0xB7, 0, 0, 0, value, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0])


def _entry(bodies: list[bytes], names: list[str] | None = None) -> Entry:
    funcs = tuple(
        FuncEntry(name=name, prog_type=PROG_TRACEPOINT,
                  attach_type=0, license="GPL", insns=body, relocs=())
        for name, body in zip(names or [f"tracepoint__syscalls__sys_enter_n{i}"
                                        for i in range(len(bodies))], bodies, strict=True)
    )  # fmt: skip
    return Entry(source="test.c", functions=funcs, tables=(), btfs=())


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_every_program_is_loaded_in_the_entrys_order() -> None:
    prog = CachedProgram(_entry([_r0_exit(i) for i in range(9)]), {})
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


def test_identical_functions_share_one_program_attached_to_each_tracepoint() -> None:
    events = ["sys_exit_openat", "sys_exit_creat", "sys_exit_openat2"]
    names = [f"tracepoint__syscalls__{e}" for e in events]
    before = _open_fds()
    prog = CachedProgram(_entry([R0_0_EXIT, _r0_exit(1), R0_0_EXIT], names), {})
    try:
        fds = [prog.funcs[n.encode()].fd for n in names]
        assert fds[0] == fds[2] != fds[1]
        prog.attach()
        assert set(prog.tracepoint_fds) == {f"syscalls:{e}".encode() for e in events}
        assert program_fds({"open": prog}, {}) == {
            "open syscalls:sys_exit_openat+sys_exit_openat2": fds[0],
            "open syscalls:sys_exit_creat": fds[1],
        }
        # what the kernel says this process attached (bench peers waits on it): the
        # shared program once per event, not once per program
        ids = {event: prog_id for prog_id, event in attached_events(os.getpid())}
        assert set(events) <= set(ids), ids
        assert ids["sys_exit_openat"] == ids["sys_exit_openat2"] != ids["sys_exit_creat"]
    finally:
        prog.cleanup()  # the shared program is closed once: no error
    assert _open_fds() == before
