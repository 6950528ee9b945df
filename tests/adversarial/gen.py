"""``python -m tests.adversarial.gen DIR COMM COUNT RATE``: exec COUNT short processes
whose comm is COMM (a symlink to /bin/true named COMM), about RATE per second; write
their pids to ``DIR/COMM.json``. The bridge sees one exec and one exit event for each.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(dirpath: str, comm: str, count: int, rate: float) -> None:
    d = Path(dirpath)
    exe = d / comm
    if not exe.exists():
        exe.symlink_to("/bin/true")
    pids: list[int] = []
    t0 = time.monotonic()
    for i in range(count):
        pid = os.posix_spawn(str(exe), [comm], {})
        pids.append(pid)
        os.waitpid(pid, 0)
        ahead = t0 + (i + 1) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    tmp = d / f"{comm}.json.tmp"
    tmp.write_text(json.dumps(pids))
    tmp.rename(d / f"{comm}.json")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
