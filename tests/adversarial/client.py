"""``python -m tests.adversarial.client PATH MODE TIMEOUT``: one attach with ringtool's
client (MODE ``fds``: ``attach_fds``; ``attach``: ``attach``, then one drain per reader;
``attach-wait``: the same with a 1 s pause before the drain)
against whatever serves PATH; prints one JSON line: the outcome, the exception's class
(and whether it is a ``KmesAttachError``), descriptors leaked, peak RSS growth.

Run as a child so that a client that hangs is killed by the test's deadline.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback
from typing import Any

from ringtool.errors import KmesAttachError, RingtoolError
from ringtool.kmes.attach import attach, attach_fds


def main(path: str, mode: str, timeout: float) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    before = len(os.listdir("/proc/self/fd"))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out: dict[str, Any] = {"ok": False}
    try:
        if mode == "fds":
            reply, fds = attach_fds(path, timeout=timeout)
            out.update(ok=True, nfds=len(fds), cpus=reply.get("cpus"))
            for fd in fds:
                os.close(fd)
        else:
            readers = attach(path, timeout=timeout)
            if mode == "attach-wait":  # give a hostile bridge time to shrink its files
                time.sleep(1.0)
            out.update(
                ok=True,
                cpus=[r.cpu for r in readers],
                capacity=[r.capacity for r in readers][:1],
                drained=sum(len(r.drain()) for r in readers),
            )
            for r in readers:
                r.close()
    except Exception as exc:
        out.update(
            exc=type(exc).__name__,
            msg=str(exc)[:300],
            attach_error=isinstance(exc, KmesAttachError),
            ringtool_error=isinstance(exc, RingtoolError),
            tb=traceback.format_exc()[-1500:],
        )
    out["leaked_fds"] = len(os.listdir("/proc/self/fd")) - before
    out["rss_growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) // 1024
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
