"""BCC's Python opensnoop on the syscall tracepoints: a peer of ``ringtool bench peers``.

The packaged ``opensnoop-bpfcc`` attaches kprobes; this is the same design
(``csrc/opensnoop_tp.c``: a hash of the paths in flight, a perf buffer, and one
``print`` per event in Python, as BCC's tools/opensnoop.py does) on
``syscalls:sys_{enter,exit}_openat``. The bench runs it in a process of its own:
``python -m ringtool.bench.peer_opensnoop``; it prints a header once attached, then
``PID COMM FD ERR PATH`` lines until SIGINT. It uses nothing of ringtool but the
import of BCC.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from ringtool.bench.cbuild import CSRC
from ringtool.programs.loader import import_bcc

SOURCE = CSRC / "opensnoop_tp.c"
PAGES = 64  # opensnoop's default perf buffer size


class Data(ctypes.Structure):
    """``struct data_t`` of opensnoop_tp.c."""

    _fields_ = [("id", ctypes.c_uint64), ("ts", ctypes.c_uint64), ("uid", ctypes.c_uint32),
                ("ret", ctypes.c_int), ("comm", ctypes.c_char * 16),
                ("fname", ctypes.c_char * 255)]  # fmt: skip


def line(event: Data) -> str:
    """One output line, as opensnoop prints it."""
    fd, err = (event.ret, 0) if event.ret >= 0 else (-1, -event.ret)
    comm, path = event.comm.decode("utf-8", "replace"), event.fname.decode("utf-8", "replace")
    return f"{event.id >> 32:<6d} {comm:<16s} {fd:4d} {err:3d} {path}"


def main() -> int:
    bpf = import_bcc().BPF(src_file=str(SOURCE).encode())
    print(f"{'PID':<6s} {'COMM':<16s} {'FD':>4s} {'ERR':>3s} PATH", flush=True)

    def on_event(cpu: int, data: Any, size: int) -> None:
        print(line(ctypes.cast(data, ctypes.POINTER(Data)).contents))

    bpf["events"].open_perf_buffer(on_event, page_cnt=PAGES)
    try:
        while True:
            bpf.perf_buffer_poll()
    except KeyboardInterrupt:
        pass
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
