"""A ``ringtool mark`` that dies half-way, for the marker delivery tests: run as
``python -m tests.helpers.killed_marker TRACE_DIR busy|corrupt``.

It does what ``mark`` does up to the protocol's reserve step -- the directory's flock,
the trace's ``marks`` user ring, :meth:`ringtool.UserRingBuffer.reserve` of a marker's
size and part of the text -- then SIGKILLs itself before the submit, leaving a BUSY
record (``busy``). With ``corrupt`` it first overwrites that record's header with a
length past ``producer_pos`` (a producer gone wrong: the kernel's drain refuses the
ring with -EINVAL from then on).
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys

from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.readers.user_ringbuf import UserRingBuffer


def main(trace_dir: str, how: str) -> None:
    dfd = os.open(trace_dir, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(dfd, fcntl.LOCK_EX)
    fd = bpf.obj_get(os.path.join(trace_dir, "marks"))
    urb = UserRingBuffer(fd)
    r = urb.reserve(load_layout().constants["TRACE_DATA_LEN"])
    r.buf[:4] = b"half"
    if how == "corrupt":
        m = map_shared(fd, PAGE_SIZE + 2 * urb.size, offset=PAGE_SIZE, writable=True,
                       what="user ring data")  # fmt: skip
        off = PAGE_SIZE + (r.pos & (urb.size - 1))
        m[off : off + 4] = (urb.size * 2).to_bytes(4, "little")  # span past producer_pos
    sys.stdout.write(f"{os.getpid()}\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
