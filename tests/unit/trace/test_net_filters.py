"""Sorting an interface's TC filters: a gone process's (replaced), a running one's, one
of other namespaces, or anything else at our priority (refused), others' (left alone).
A filter's owner is the process with its pid *and* start time in the namespaces named:
whatever now has the pid, and whatever its command line says, does not decide."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ringtool.kernel.proc_start import namespace_key, process_key, process_start
from ringtool.trace.reading.net_filters import FILTER_PRIO, TcFilter, classify, filter_name, owner

NS = namespace_key()


def _bpf(name: str, prio: int = FILTER_PRIO, hook: str = "ingress") -> TcFilter:
    return TcFilter(hook, prio, 1, "bpf", name)


@contextmanager
def _sleeper(*argv: str) -> Iterator[int]:
    """A running process (``argv``: its extra arguments); its pid."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv])
    try:
        yield p.pid
    finally:
        p.kill()
        p.wait()


def test_names_carry_the_owner_pid_start_time_and_namespaces() -> None:
    assert owner(filter_name("trace_net_egress", "4242-987", "11_22")) == ("4242-987", "11_22")
    assert owner(filter_name("trace_net_egress", "4242-987", "?")) == ("4242-987", "?")
    assert filter_name("trace_net_egress", "4242-987", "11_22") == \
        "ringtool/4242-987-11_22/trace_net_egress"  # fmt: skip
    assert owner("trace_net_egress") is None  # the bare name of older versions
    assert owner("ringtool/4242/trace_net_egress") is None  # pid only: older versions
    assert owner("ringtool/4242-987/trace_net_egress") is None  # no namespaces: older
    assert owner("ringtool/4242-987-1.2/trace_net_egress") is None
    assert owner("ringtool/12-3/something_else") is None
    assert owner("ringtool/x-3/trace_net_ingress") is None


def test_a_gone_processs_filters_are_leftovers_a_running_ones_conflicts() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with _sleeper() as alive:
        found = classify(
            [_bpf(filter_name("trace_net_ingress", f"{gone.pid}-1", NS)),
             _bpf(filter_name("trace_net_egress", process_key(alive), NS), hook="egress"),
             _bpf("trace_net_ingress"),  # an older ringtool's: may run
             _bpf(f"ringtool/{gone.pid}/trace_net_ingress"),  # one with the pid only
             _bpf(f"ringtool/{gone.pid}-1/trace_net_ingress"),  # no namespace key
             TcFilter("egress", FILTER_PRIO, 2, "u32", ""),  # not ours, at our priority
             _bpf("someone", prio=1), TcFilter("egress", 60000, 0x800, "u32", "")],
            me="1-1", ns=NS,
        )  # fmt: skip
    gone_name = filter_name("trace_net_ingress", f"{gone.pid}-1", NS)
    assert [f.name for f in found.leftovers] == [gone_name]
    assert [(f.hook, f.kind) for f in found.conflicts] == [
        ("egress", "bpf"), ("ingress", "bpf"), ("ingress", "bpf"), ("ingress", "bpf"),
        ("egress", "u32")
    ]  # fmt: skip
    assert [f.describe() for f in found.foreign] == [
        "ingress pref 1 bpf 'someone'", "egress pref 60000 u32"
    ]  # fmt: skip


def test_this_process_own_filters_are_never_leftovers() -> None:
    mine = _bpf(filter_name("trace_net_ingress", "77-5", NS))
    assert classify([mine], me="77-5", ns=NS).conflicts == [mine]


def test_a_dead_traces_filter_is_a_leftover_whatever_process_reuses_its_pid() -> None:
    # the process that got the dead trace's pid mentions ringtool in its arguments
    with _sleeper("ringtool-notes.txt") as reused:
        start = process_start(reused)
        assert start is not None
        dead = _bpf(filter_name("trace_net_ingress", f"{reused}-{start - 1}", NS))
        assert classify([dead], me="1-1", ns=NS).leftovers == [dead]


def test_a_live_in_process_net_source_is_not_a_leftover() -> None:
    # a program using the net source in-process: no 'ringtool' in its command line
    with _sleeper("monitor_app.py") as app:
        live = _bpf(filter_name("trace_net_ingress", process_key(app), NS))
        found = classify([live], me="1-1", ns=NS)
    assert (found.leftovers, found.conflicts) == ([], [live])


def test_a_filter_of_other_namespaces_is_never_judged_a_leftover() -> None:
    """A pid of another time namespace (start times shifted there) whose pid runs here,
    or one read where our /proc is not our PID namespace's (``?``), means nothing here:
    refused, never deleted. A pid of our PID namespace that no process has is gone,
    whatever the time namespace."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    other_time = f"{NS.partition('_')[0]}_1"
    running = _bpf(filter_name("trace_net_ingress", process_key(1), other_time))
    unknown = _bpf(filter_name("trace_net_ingress", f"{gone.pid}-1", "?"))
    assert classify([running, unknown], me="1-1", ns=NS).conflicts == [running, unknown]
    ours = _bpf(filter_name("trace_net_ingress", f"{gone.pid}-1", NS))
    assert classify([ours], me="1-1", ns="?").conflicts == [ours]
    assert classify([ours], me="1-1", ns=NS).leftovers == [ours]
    elsewhen = _bpf(filter_name("trace_net_ingress", f"{gone.pid}-1", other_time))
    assert classify([elsewhen], me="1-1", ns=NS).leftovers == [elsewhen]
