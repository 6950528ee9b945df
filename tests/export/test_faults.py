"""The export thread notices a broker that dies while the socket to it is full.

Found as a flaky ``test_broker_restart_mid_run``: a broker killed while the exporter's
TCP buffers were full left the publisher waiting for ever inside ``nc.publish`` (a
forced flush whose request stayed queued to nats-py's flusher, cancelled by the close):
no "lost the connection", no reconnect, every later event counted as dropped at the
end. Here it happens every time: the broker is stopped (SIGSTOP) until the buffers
fill and the publisher waits in a flush, then killed.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.export import (
    Collect,
    exported_run,
    finish,
    notes,
    start_trace,
    wait_exported,
    work,
)
from tests.helpers.paths import RINGTOOL
from tests.helpers.servers import NatsServer
from tests.helpers.stream_check import check_invariant, read_stream
from tests.helpers.trace import Trace, hot_file, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel


def wait_note(trace: Trace, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in n for n in notes(trace.err_lines)):
        assert time.monotonic() < deadline, (text, notes(trace.err_lines))
        time.sleep(0.1)


def test_broker_killed_while_the_socket_is_full(nats: NatsServer, tmp_path: Path) -> None:
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = start_trace(nats, comm)
    work(comm, target, 2000)
    wait_exported(trace, 2000)
    assert nats.proc is not None
    nats.proc.send_signal(signal.SIGSTOP)
    work(comm, target, 60000)  # more than the TCP buffers and nats-py's 2 MiB pending
    time.sleep(1.0)  # the publisher now waits in a forced flush
    nats.stop(signal.SIGKILL)  # a stopped process dies at once; its sockets reset
    wait_note(trace, "lost the connection", 30)  # before the fix: never
    nats.start()
    wait_note(trace, "connected to", 60)
    work(comm, target, 1000)
    wait_exported(trace, 63000)
    summary, _out, err = finish(trace)
    said = notes(err.splitlines())
    assert sum("lost the connection" in n for n in said) == 1, said
    check_invariant(summary, 63000, read_stream(nats), "h1")
    x = summary["export"]
    assert x["export_duplicates"] <= x["export_resends"], x


def test_collect_rides_out_a_broker_restart(nats: NatsServer, tmp_path: Path) -> None:
    """``collect`` running while the broker is killed and restarted: one line each way
    on stderr, no traceback, and the events exported after the restart are read."""
    comm, target = unique_comm(), hot_file(tmp_path)

    def run_trace(n: int) -> dict:  # type: ignore[type-arg]
        tr = Trace("--json", "--stats", "-c", comm, "--events", "open", "--export", nats.url,
                   "--host-name", "solo")  # fmt: skip
        work(comm, target, n)
        wait_exported(tr, n)
        return finish(tr)[0]

    def solo_events() -> int:
        """Events (less duplicates) in collect's latest host line for "solo"."""
        for line in reversed(col.lines):
            rec = json.loads(line)
            if rec.get("host") == "solo":
                return int(rec["events"]) - int(rec["duplicates"])
        return -1

    def wait_for(cond: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 90
        while not cond():
            assert col.proc.poll() is None, (what, col.proc.communicate())
            assert time.monotonic() < deadline, (what, col.lines[-3:])
            time.sleep(0.1)

    first = run_trace(1000)
    col = Collect([*RINGTOOL, "collect", nats.url, "--json", "--interval", "0.3"])
    try:
        n1 = first["export"]["exported"]
        wait_for(lambda: solo_events() == n1, "collect read the first run")
        nats.stop(signal.SIGKILL)
        wait_for(lambda: "lost the connection" in col.stderr(), "collect said it lost it")
        nats.start()
        second = run_trace(2000)
        want = n1 + second["export"]["exported"]
        wait_for(lambda: solo_events() == want, "collect read the second run")
    finally:
        err = col.stop()
    assert sum("lost the connection" in line for line in err.splitlines()) == 1, err
    assert sum("again after" in line for line in err.splitlines()) == 1, err
    solo = json.loads(col.lines[-1])["per_host"]["solo"]
    # at least once: a batch read but not acknowledged when the broker died comes again
    assert solo["events"] - solo["duplicates"] == want, solo
    assert solo["runs"] == 2 and solo["gaps"] == 0, solo


@pytest.mark.parametrize("what", ["consumer", "stream"])
def test_collect_says_when_its_consumer_or_stream_is_deleted(
    nats: NatsServer, tmp_path: Path, what: str
) -> None:
    """Another client deletes the durable consumer (or the stream) under ``collect``:
    before, its fetches timed out for ever and it said nothing."""

    tr, _ = exported_run(nats, tmp_path, 100)
    finish(tr)
    col = Collect([*RINGTOOL, "collect", nats.url, "--json", "--interval", "0.3"])
    p = col.proc
    try:
        deadline = time.monotonic() + 90  # bound and ticking: its first fleet line
        while not any('"type": "fleet"' in line for line in col.lines):
            assert p.poll() is None and time.monotonic() < deadline, col.stderr()
            time.sleep(0.1)

        async def delete(nc):  # type: ignore[no-untyped-def]
            js = nc.jetstream()
            if what == "consumer":
                await js.delete_consumer("RINGTOOL", "ringtool-collect")
            else:
                await js.delete_stream("RINGTOOL")

        nats.run(delete)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = col.stderr()
    assert p.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert (
        "no longer exists" in err
        and ("RINGTOOL" if what == "stream" else "ringtool-collect") in err
    )
