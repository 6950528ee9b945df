"""Sorting an interface's TC filters: a killed ringtool's (replaced), a running
ringtool's or anything else at our priority (refused), others' (left alone)."""

from __future__ import annotations

import subprocess
import sys

from ringtool.trace.net_filters import FILTER_PRIO, TcFilter, classify, filter_name, owner


def _bpf(name: str, prio: int = FILTER_PRIO, hook: str = "ingress") -> TcFilter:
    return TcFilter(hook, prio, 1, "bpf", name)


def test_names_carry_the_owner_pid() -> None:
    assert owner(filter_name("trace_net_egress", 4242)) == 4242
    assert owner("trace_net_egress") is None  # the bare name of older versions
    assert owner("ringtool/12/something_else") is None
    assert owner("ringtool/x/trace_net_ingress") is None


def test_a_gone_ringtools_filters_are_leftovers_a_running_ones_conflicts() -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "ringtool"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        found = classify(
            [_bpf(filter_name("trace_net_ingress", gone.pid)),
             _bpf(filter_name("trace_net_egress", alive.pid), hook="egress"),
             _bpf("trace_net_ingress"),  # an older ringtool's: may run
             TcFilter("egress", FILTER_PRIO, 2, "u32", ""),  # not ours, at our priority
             _bpf("someone", prio=1), TcFilter("egress", 60000, 0x800, "u32", "")],
            me=1,
        )  # fmt: skip
    finally:
        alive.kill()
        alive.wait()
    assert [f.name for f in found.leftovers] == [filter_name("trace_net_ingress", gone.pid)]
    assert [(f.hook, f.kind) for f in found.conflicts] == [
        ("egress", "bpf"), ("ingress", "bpf"), ("egress", "u32")
    ]  # fmt: skip
    assert [f.describe() for f in found.foreign] == [
        "ingress pref 1 bpf 'someone'", "egress pref 60000 u32"
    ]  # fmt: skip


def test_this_process_own_filters_are_never_leftovers() -> None:
    mine = _bpf(filter_name("trace_net_ingress", 77))
    assert classify([mine], me=77).conflicts == [mine]
