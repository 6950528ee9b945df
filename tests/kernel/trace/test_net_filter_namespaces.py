"""A net trace in another PID or time namespace that shares the host's network
namespace (a container; ``unshare -T --boottime``) cannot tell whether the host's
trace whose filter it finds runs: the filter name's namespace key
(ringtool/trace/reading/net_filters.py) makes it refuse, never delete, that filter. And
a trace deletes its own filters by handle: another filter at our priority stays.

Before: the name had no namespace key, so the host's live trace looked dead there (pid
unknown, or start time shifted) and its filters were deleted; and a trace's close
deleted every filter at our priority."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys

import pytest

from ringtool.kernel.proc_start import liveness, namespace_key, process_key
from ringtool.trace.reading.net_filters import FILTER_PRIO, filter_name
from tests.helpers.namespaces import PID_NS, TIME_NS, live_pid_namespace, python_in
from tests.helpers.netdev import add_bpf_filter, dummy
from tests.helpers.paths import ROOT
from tests.helpers.procs import run_ringtool
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("unshare", [PID_NS, TIME_NS], ids=["pid", "time"])
def test_a_live_host_filter_is_no_leftover_in_another_namespace(
    unshare: tuple[str, ...],
) -> None:
    name = filter_name("trace_net_ingress", process_key(os.getpid()), namespace_key())
    code = (
        "from ringtool.kernel.proc_start import namespace_key\n"
        "from ringtool.trace.reading.net_filters import FILTER_PRIO, TcFilter, classify\n"
        f"f = TcFilter('ingress', FILTER_PRIO, 1, 'bpf', {name!r})\n"
        "s = classify([f], '1-1', namespace_key())\n"
        "print('LEFTOVER' if s.leftovers else 'CONFLICT' if s.conflicts else 'FOREIGN')\n"
    )
    assert python_in(unshare, code) == "CONFLICT", f"{name} of a live process judged otherwise"


_KEYS = (
    "from ringtool.kernel.proc_start import namespace_key, process_key\n"
    "print(process_key(1), namespace_key())"
)


def test_a_gone_namespace_is_judged_only_where_every_process_is_seen() -> None:
    """A process of a PID namespace nothing runs in any more is gone, seen from the
    initial PID namespace; behind a /proc mounted with hidepid (a process we may not
    ptrace is missing from it) that cannot be told."""
    key, gone = python_in(PID_NS, _KEYS).split()
    assert liveness(key, gone, namespace_key()) is False
    code = (
        "from ringtool.kernel.proc_start import liveness, namespace_key\n"
        f"print(liveness({key!r}, {gone!r}, namespace_key()))"
    )
    python = shlex.join([sys.executable, "-c", code])
    script = f"mount -t proc -o hidepid=invisible proc /proc && exec {python}"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.stdout.strip() == "None"


def test_a_trace_deletes_only_its_own_filters_at_our_priority() -> None:
    with live_pid_namespace() as running:  # a container whose trace may run
        _deletes_only_its_own(f"ringtool/1-2-{running}/trace_net_{{}}")


def _deletes_only_its_own(other: str) -> None:
    """``other``: the filter name (``{}``: the hook) of another namespace's trace."""
    with dummy() as dev:
        trace = Trace("--json", "--events", "net", "-i", dev.name)
        mine = filter_name("trace_net_ingress", process_key(trace.proc.pid), namespace_key())
        assert mine in dev.filters("ingress")
        for hook in ("ingress", "egress"):  # added while ours runs: at our priority
            add_bpf_filter(dev.name, hook, FILTER_PRIO, 2, other.format(hook))
        trace.signal(signal.SIGINT)
        trace.finish()
        for hook in ("ingress", "egress"):
            left = dev.filters(hook)
            assert other.format(hook) in left, f"{hook}: the other trace's filter was deleted"
            assert f"ringtool/{trace.proc.pid}-" not in left  # ours deleted
        # the next trace cannot judge the other namespace's filter: refused, not deleted
        again = run_ringtool("trace", "--json", "--events", "net", "-i", dev.name, "-d", "1",
                             timeout=240)  # fmt: skip
        assert again.returncode != 0
        assert other.format("ingress") in again.stderr
        assert f"tc filter del dev {dev.name} ingress|egress pref {FILTER_PRIO}" in again.stderr
        assert other.format("ingress") in dev.filters("ingress")
