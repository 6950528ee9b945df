"""A net trace killed with SIGKILL leaves its TC filters (and clsact) on the interface;
the next net trace replaces them, says so, captures, and leaves other filters alone.

Before: every later net trace on the interface failed (``cannot capture on IF: File
exists``: exit 1, or with other sources a note and no net events)."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from tests.helpers.netdev import dummy
from tests.helpers.trace import Trace, told_json

pytestmark = pytest.mark.kernel


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

        again = Trace("--json", "--events", "net", "-i", dev.name)
        dev.send_udp(b"after the kill", 5)
        again.signal(signal.SIGINT)
        lines, err = again.finish()
        notes = told_json(err)[0]["notes"]
        assert f"source net: replaced a filter left by a killed ringtool on {dev.name} " \
               "(egress, ingress)" in notes  # fmt: skip
        assert any("not ringtool's, left alone" in n and "egress pref 60000 u32" in n
                   for n in notes), notes  # fmt: skip
        sent = [e for e in map(json.loads, lines)
                if e["type"] == "net" and e["dst"] == dev.peer and e["dport"] == 9]  # fmt: skip
        assert len(sent) == 5
        egress = dev.filters("egress")
        assert "pref 60000 u32" in egress  # untouched
        assert "ringtool/" not in egress + dev.filters("ingress")  # ours removed at the end
