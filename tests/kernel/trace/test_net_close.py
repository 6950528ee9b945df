"""What a net trace leaves on its interface when it ends: nothing of its own, and
everything of others. It deletes its two filters; the clsact qdisc it added goes only
when no filter is left on it (another tool may add some while the trace runs)."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from tests.helpers.netdev import dummy
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel


def _qdiscs(dev: str) -> str:
    return subprocess.run(["tc", "qdisc", "show", "dev", dev], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def test_filters_others_added_during_the_trace_survive_its_exit() -> None:
    with dummy() as dev:
        trace = Trace("--json", "--events", "net", "-i", dev.name)
        assert "clsact" in _qdiscs(dev.name)  # added by the trace
        subprocess.run(["tc", "filter", "add", "dev", dev.name, "ingress", "pref", "10", "u32",
                        "match", "u32", "0", "0"], check=True)  # fmt: skip
        trace.signal(signal.SIGINT)
        trace.finish()
        ingress = dev.filters("ingress")
        assert "pref 10 u32" in ingress  # the other tool's filter, and its clsact, stay
        assert "ringtool/" not in ingress + dev.filters("egress")
        assert "clsact" in _qdiscs(dev.name)


def test_the_clsact_the_trace_added_goes_when_nothing_else_is_on_it() -> None:
    with dummy() as dev:
        trace = Trace("--json", "--events", "net", "-i", dev.name)
        trace.signal(signal.SIGINT)
        trace.finish()
        assert "clsact" not in _qdiscs(dev.name)


def test_sighup_ends_the_trace_cleanly_and_removes_its_filters() -> None:
    # an ssh session that drops sends SIGHUP: before, exit 129 and the filters stayed
    with dummy() as dev:
        trace = Trace("--json", "--events", "net", "-i", dev.name)
        trace.signal(signal.SIGHUP)
        lines, _ = trace.finish()  # exit 0
        assert json.loads(lines[-1])["type"] == "summary", lines[-3:]
        assert "ringtool/" not in dev.filters("ingress") + dev.filters("egress")
        assert "clsact" not in _qdiscs(dev.name)
