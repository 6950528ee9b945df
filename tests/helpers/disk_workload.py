"""Block I/O of known sizes on a loop device of its own, for the disk source's tests.

:func:`loop_device` attaches a temporary file as a loop device (``losetup``, as root)
and always detaches it. :func:`run_io` runs the workload as a process of a name of its
own (``python -m tests.helpers.disk_workload DEVICE COMM``): ``O_DIRECT`` writes of
:data:`WRITE_SIZE` bytes at :data:`WRITES` distinct offsets, then ``O_DIRECT`` reads of
:data:`READ_SIZE` at :data:`READS` offsets, each waited for (one request each: no
plug merges them, no page cache reads ahead); it reports its pid and every call's
offset, size and result, and the device's own counters (/sys/block/NAME/stat) are
read before and after it (after udev, where it runs, has settled).
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

WRITE_SIZE = 64 * 1024
WRITES = 24
READ_SIZE = 16 * 1024
READS = 40
#: the loop device's backing file
DEVICE_BYTES = 16 * 1024 * 1024
PR_SET_NAME = 15


@contextmanager
def loop_device(tmp: Path) -> Iterator[str]:
    """A loop device (``/dev/loopN``) on a new file in ``tmp``, detached at the end."""
    backing = tmp / "disk.img"
    with open(backing, "wb") as f:
        f.truncate(DEVICE_BYTES)
    # the loop driver: a module on Debian's kernels, loaded on the first open of
    # /dev/loop-control where udev made that node, by hand where nothing did (the
    # kernel guests of make test-kernels boot with no udev)
    subprocess.run(["modprobe", "loop"], check=False, capture_output=True, timeout=60)
    argv = ["losetup", "--find", "--show", str(backing)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"losetup: {done.stderr.strip()}"
    dev = done.stdout.strip()
    try:
        settle()
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False, capture_output=True, timeout=60)


def settle() -> None:
    """Where udev runs, wait for its queue to empty: it probes a new device (blkid's
    reads), and again when a writer closes it (its inotify watch), and those reads
    must fall outside, or wholly inside, what a test counts."""
    if shutil.which("udevadm"):
        subprocess.run(["udevadm", "settle", "--timeout=60"], check=False, timeout=90)


def device_stat(dev: str) -> dict[str, int]:
    """The completed reads, writes and flushes of block device ``dev`` since it was
    attached (/sys/block/NAME/stat: fields 1, 5 and 15; Documentation/block/stat.rst)."""
    fields = Path(f"/sys/block/{os.path.basename(dev)}/stat").read_text().split()
    return {"read": int(fields[0]), "write": int(fields[4]),
            "flush": int(fields[14]) if len(fields) > 14 else 0}  # fmt: skip


def device_numbers(dev: str) -> str:
    """``"7:3"``: the major and minor numbers of block device ``dev``."""
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def run_io(dev: str, comm: str) -> dict[str, Any]:
    """Run the workload on ``dev`` as a process named ``comm``; its report (``pid``,
    ``ops``: ``[op, offset, size, result]``) and the device's counters' growth
    (``stat``)."""
    from tests.helpers.paths import PY, ROOT

    before = device_stat(dev)
    argv = [PY, "-m", "tests.helpers.disk_workload", dev, comm]
    out = subprocess.run(
        argv, cwd=ROOT, check=True, capture_output=True, text=True, timeout=120
    ).stdout
    settle()
    after = device_stat(dev)
    report: dict[str, Any] = json.loads(out)
    report["stat"] = {k: after[k] - before[k] for k in after}
    return report


def _work(dev: str, comm: str) -> dict[str, Any]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_NAME, comm.encode(), 0, 0, 0)
    buf = mmap.mmap(-1, WRITE_SIZE)  # page-aligned, as O_DIRECT needs
    buf.write(b"\x5a" * WRITE_SIZE)
    ops: list[list[Any]] = []
    fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
    try:
        for i in range(WRITES):
            off = i * 2 * WRITE_SIZE  # gaps between them: nothing to merge
            ops.append(["write", off, WRITE_SIZE, os.pwritev(fd, [buf], off)])
        view = memoryview(buf)[:READ_SIZE]
        for i in range(READS):
            off = i * 3 * READ_SIZE
            ops.append(["read", off, READ_SIZE, os.preadv(fd, [view], off)])
        view.release()
    finally:
        os.close(fd)
    return {"pid": os.getpid(), "ops": ops}


if __name__ == "__main__":
    print(json.dumps(_work(sys.argv[1], sys.argv[2])))
