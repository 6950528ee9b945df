"""A process that makes sleeps of known length in three syscalls once told to, and
prints what it measured: ``{"clock_nanosleep": [ns, ...], "pselect6": [...],
"poll": [...]}``. Started by tests/kernel/test_trace_latency.py (``-p`` its pid)."""

from __future__ import annotations

import json
import select
import sys
import time

#: syscall -> (seconds, times): time.sleep is clock_nanosleep, select.select pselect6
#: and poll.poll poll on x86_64 glibc
PLAN = {"clock_nanosleep": (0.300, 4), "pselect6": (0.020, 20), "poll": (0.002, 100)}


def main() -> None:
    sys.stdin.readline()  # the trace is running
    poller = select.poll()
    calls = {
        "clock_nanosleep": time.sleep,
        "pselect6": lambda s: select.select([], [], [], s),
        "poll": lambda s: poller.poll(s * 1000),
    }
    took: dict[str, list[int]] = {}
    for name, (seconds, times) in PLAN.items():
        for _ in range(times):
            t0 = time.monotonic_ns()
            calls[name](seconds)
            took.setdefault(name, []).append(time.monotonic_ns() - t0)
    print(json.dumps(took), flush=True)


if __name__ == "__main__":
    main()
