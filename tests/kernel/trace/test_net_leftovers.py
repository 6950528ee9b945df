"""A net trace killed with SIGKILL leaves its TC filters (and clsact) on the interface;
the next net trace replaces them, says so, captures, and leaves other filters alone.

Before: every later net trace on the interface failed (``cannot capture on IF: File
exists``: exit 1, or with other sources a note and no net events)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from ringtool.kernel.proc_start import namespace_key
from ringtool.trace.reading.marks import PIN_ROOT
from tests.helpers.namespaces import PID_NS
from tests.helpers.netdev import Dummy, dummy
from tests.helpers.paths import RINGTOOL
from tests.helpers.procs import Lines, stop
from tests.helpers.trace import Trace, told_json

pytestmark = pytest.mark.kernel


def _replaced_and_traced(dev: Dummy, args: list[str], count: int) -> list[str]:
    """A net trace ``--json ARGS`` on ``dev`` after a killed one: it says it replaced
    the leftover filters, and traces ``count`` datagrams sent to the peer; its notes."""
    again = Trace("--json", *args)
    dev.send_udp(b"after the kill", count)
    again.signal(signal.SIGINT)
    lines, err = again.finish()
    notes: list[str] = told_json(err)[0]["notes"]
    assert f"source net: replaced a filter left by a killed ringtool on {dev.name} " \
           "(egress, ingress)" in notes  # fmt: skip
    sent = [e for e in map(json.loads, lines)
            if e["type"] == "net" and e["dst"] == dev.peer and e["dport"] == 9]  # fmt: skip
    assert len(sent) == count
    return notes


def test_a_killed_traces_filters_are_replaced_and_others_left_alone() -> None:
    with dummy() as dev:
        killed = Trace("--json", "--events", "net", "-i", dev.name)
        killed.signal(signal.SIGKILL)
        killed.proc.wait(30)
        killed.join()
        for hook in ("ingress", "egress"):
            assert "pref 49152 bpf" in dev.filters(hook)  # left: nobody removed them
        # someone else's filter, after ours (matching every packet)
        foreign = ["tc", "filter", "add", "dev", dev.name, "egress", "pref", "60000", "u32",
                   "match", "u32", "0", "0"]  # fmt: skip
        subprocess.run(["tc", "qdisc", "add", "dev", dev.name, "clsact"], check=False)
        subprocess.run(foreign, check=True)

        notes = _replaced_and_traced(dev, ["--events", "net", "-i", dev.name], 5)
        assert any("not ringtool's, left alone" in n and "egress pref 60000 u32" in n
                   for n in notes), notes  # fmt: skip
        egress = dev.filters("egress")
        assert "pref 60000 u32" in egress  # untouched
        assert "ringtool/" not in egress + dev.filters("ingress")  # ours removed at the end


def test_a_killed_containers_filters_and_pins_are_replaced_once_its_namespace_is_gone() -> None:
    """A net trace in a PID namespace of its own (a container sharing the host's
    network and bpffs), killed with its namespace: no process can be that trace, so
    the host's next trace replaces its filters and removes its marker directory.
    Before: its filters were of another namespace, never judged, and every later net
    trace on the interface failed (TC priority taken), its pins held its rings."""
    with dummy() as dev:
        before = set(os.listdir(PIN_ROOT)) if os.path.isdir(PIN_ROOT) else set()
        argv = ["trace", "--json", "--events", "exec,net", "-i", dev.name]  # exec: pins
        box = Lines(["unshare", "--kill-child", *PID_NS, *RINGTOOL, *argv])
        try:
            deadline = time.monotonic() + 240
            while not any('"type": "start"' in line for line in list(box.err_lines)):
                assert box.proc.poll() is None, box.err
                assert time.monotonic() < deadline, "the container's trace did not start"
                time.sleep(0.05)
            with open(f"/proc/{box.proc.pid}/task/{box.proc.pid}/children") as f:
                (trace,) = f.read().split()  # the namespace's init: the trace
            os.kill(int(trace), signal.SIGKILL)
            box.proc.wait(60)  # unshare reaped it: nothing is left in its namespace
        finally:
            stop(box.proc, signal.SIGKILL)
        assert "ringtool/1-" in dev.filters("ingress")  # left behind
        ours = namespace_key().partition("_")[0]
        pins = [n for n in set(os.listdir(PIN_ROOT)) - before
                if n.startswith("1-") and n.split("-")[2].partition("_")[0] != ours]  # fmt: skip
        assert len(pins) == 1, pins

        _replaced_and_traced(dev, argv[2:], 3)
        assert pins[0] not in os.listdir(PIN_ROOT)
        assert "ringtool/" not in dev.filters("egress") + dev.filters("ingress")
