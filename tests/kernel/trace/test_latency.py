"""Syscall latency figures against sleeps of known length: the real CLI loads the real
syscalls source, a test process sleeps 300 ms, 20 ms and 2 ms in three syscalls, and
every p99 ringtool prints (``--hist --json``, the ``--hist`` text) is within 10% of
the true p99 (on old main, log2 buckets: 534 ms for 300 ms).

The true p99 of a syscall's durations is not known exactly, but bounded: no sleep
returns before its timeout (the lower bound), and the sleeper's own clock reads around
each call (the upper bound) add the Python call and any delay before the read (in the
emulated test VM, 2 ms polls measured 2.57 ms while the kernel saw 2.3 ms). So a
printed p99 must lie within 10% of that interval: ``0.9 * timeout <= p99 <= 1.1 *
measured``."""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys

import pytest

from tests.helpers.latency_sleeper import PLAN
from tests.helpers.paths import ROOT
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel

_UNIT = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}


def _p99(values: list[int]) -> int:
    return sorted(values)[math.ceil(0.99 * len(values)) - 1]


def _within(printed: float, name: str, took: list[int]) -> bool:
    """``printed`` within 10% of the interval that holds the true p99 (module doc)."""
    return 0.9 * PLAN[name][0] * 1e9 <= printed <= 1.1 * _p99(took)


def _sleep_traced(*flags: str) -> tuple[list[str], dict[str, list[int]]]:
    sleeper = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.latency_sleeper"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        trace = Trace("--events", "syscalls", "--hist", "-p", str(sleeper.pid), *flags)
        assert sleeper.stdin is not None and sleeper.stdout is not None
        sleeper.stdin.write("go\n")
        sleeper.stdin.flush()
        measured = json.loads(sleeper.stdout.readline())
        sleeper.wait(timeout=60)
        trace.signal(signal.SIGINT)
        out, _ = trace.finish()
    finally:
        sleeper.kill()
        sleeper.wait()
    return out, measured


def test_hist_json_p99_is_within_ten_percent_of_known_sleeps() -> None:
    out, measured = _sleep_traced("--json")
    hists = {o["syscall"]: o for o in map(json.loads, out) if o["type"] == "hist"}
    for name, took in measured.items():
        record = hists[name]
        assert record["count"] == len(took), (name, record)
        p99_ns = record["p99_us"] * 1000  # microseconds, as every latency of --json
        assert _within(p99_ns, name, took), (name, record["p99_us"], _p99(took))
        assert record["p99_max_error"] < 0.10
        # 2 significant digits: no digit the buckets cannot back
        digits = f"{record['p99_us']:e}".split("e")[0].rstrip("0").replace(".", "")
        assert len(digits) <= 2, record["p99_us"]
        assert sum(n for _, _, n in record["buckets"]) == len(took)


def test_hist_text_p99_is_within_ten_percent_of_known_sleeps() -> None:
    out, measured = _sleep_traced("--no-tui")
    titles = {}
    for line in out:
        m = re.fullmatch(r"syscall (\w+): ([\d,]+) calls, p99 (\d+(?:\.\d)?)(ns|µs|ms|s)", line)
        if m:
            titles[m[1]] = float(m[3]) * _UNIT[m[4]]
    for name, took in measured.items():
        assert _within(titles[name], name, took), (name, titles[name], _p99(took))
