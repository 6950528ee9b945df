"""``trace --export`` accounts for every event end to end, against a real nats-server.

The workload is real: worker processes with a unique comm do exactly N opens (the
trace runs with ``-c COMM --events open``, so N is the number of matching events
generated). For every run: generated = exported + export_dropped + dropped + lost, and
the stream holds exactly the exported events, none twice — in a normal run, when the
broker is killed and restarted (file storage) mid-run, when it is down at the end, when
it is stopped (SIGSTOP: slow, acknowledgements time out, resends are deduplicated),
and when its stream refuses messages (max_bytes, discard new, a consumer not acking).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from ringtool.export.publisher import ACK_TIMEOUT_S
from tests.helpers.export import exported_run, finish, notes, start_trace, wait_exported, work
from tests.helpers.servers import NatsServer
from tests.helpers.stream_check import check_invariant, event_lines, read_stream
from tests.helpers.trace import Trace, Worker, hot_file, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the export, not the kernel


def test_normal_run_stream_holds_exactly_what_was_traced(nats: NatsServer, tmp_path: Path) -> None:
    trace, comm = exported_run(nats, tmp_path, 20000)
    summary, out, _ = finish(trace)
    content = read_stream(nats)
    check_invariant(summary, 20000, content, "h1")
    assert summary["export"]["export_dropped"] == 0
    # what the stream holds is what the tracer printed, line for line
    assert sorted(content.lines("h1")) == sorted(event_lines(out))
    assert all(json.loads(line)["comm"] == comm for line in content.lines("h1"))
    assert content.summaries["h1"]["exported"] == summary["export"]["exported"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_broker_restart_mid_run(nats: NatsServer, tmp_path: Path, sig: int) -> None:
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = start_trace(nats, comm)
    w = Worker(comm, "open", target, 30000)
    w.go()
    time.sleep(0.05)
    nats.stop(sig)  # while the worker runs: messages in flight when it dies
    w.wait()
    work(comm, target, 10000)  # broker down: these wait in the queue
    time.sleep(1.0)
    nats.start()  # same port, same file store
    deadline = time.monotonic() + 60
    while not any("connected to" in n for n in notes(trace.err_lines)):
        assert time.monotonic() < deadline, notes(trace.err_lines)
        time.sleep(0.1)
    work(comm, target, 10000)
    wait_exported(trace, 50000)
    summary, _out, err = finish(trace)
    said = notes(err.splitlines())
    assert sum("lost the connection" in n for n in said) == 1, said
    assert sum("connected to" in n for n in said) == 1, said
    content = read_stream(nats)
    check_invariant(summary, 50000, content, "h1")
    x = summary["export"]
    assert x["export_dropped"] == 0, x  # the queue held everything while it was down
    assert x["export_duplicates"] <= x["export_resends"]


def test_broker_down_at_the_end(nats: NatsServer, tmp_path: Path) -> None:
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = start_trace(nats, comm, "--export-drain", "1")
    work(comm, target, 5000)
    wait_exported(trace, 5000)
    nats.stop()
    work(comm, target, 7000)
    time.sleep(1.0)
    summary, _out, err = finish(trace)
    assert any("lost the connection" in n for n in notes(err.splitlines()))
    x = summary["export"]
    assert x["exported"] == 5000 - summary["dropped"]  # 7000 never reached the stream
    assert x["export_dropped"] >= 7000 - summary["dropped"]
    nats.start()
    check_invariant(summary, 12000, read_stream(nats), "h1")


def test_stopped_broker_fills_the_queue_and_resends_are_deduplicated(
    nats: NatsServer, tmp_path: Path
) -> None:
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = start_trace(nats, comm, "--export-queue-mb", "1")
    work(comm, target, 3000)
    wait_exported(trace, 3000)
    assert nats.proc is not None
    nats.proc.send_signal(signal.SIGSTOP)  # alive but silent: no answers
    try:
        work(comm, target, 2000)  # sent, unanswered
        time.sleep(ACK_TIMEOUT_S + 1.5)  # answers overdue: sent again, same Msg-Ids
        work(comm, target, 60000)  # the TCP buffers fill, then the 1 MiB queue
        time.sleep(1.0)
    finally:
        nats.proc.send_signal(signal.SIGCONT)
    work(comm, target, 1000)
    wait_exported(trace, 66000)
    summary, _, _ = finish(trace)
    content = read_stream(nats)
    check_invariant(summary, 66000, content, "h1")
    x = summary["export"]
    assert x["export_dropped_by_reason"]["queue_full"] > 0, x  # the queue overflowed
    assert x["export_resends"] > 0, x
    assert x["export_duplicates"] > 0, x  # the stream had stored the first sends


def test_stream_that_refuses_messages(nats: NatsServer, tmp_path: Path) -> None:
    """A stream with a small max_bytes and discard new, and a consumer that never acks:
    the refused events are counted, the stream holds exactly the rest."""

    async def setup(nc):  # type: ignore[no-untyped-def]
        from nats.js.api import (
            ConsumerConfig,
            DiscardPolicy,
            RetentionPolicy,
            StorageType,  # fmt: skip
            StreamConfig,
        )

        js = nc.jetstream()
        # interest retention: what the lazy consumer has not acked stays stored
        await js.add_stream(StreamConfig(
            name="RINGTOOL", subjects=["ringtool.>"], storage=StorageType.FILE,
            retention=RetentionPolicy.INTEREST, max_bytes=256 * 1024,
            discard=DiscardPolicy.NEW, duplicate_window=120,
        ))  # fmt: skip
        await js.add_consumer("RINGTOOL", ConsumerConfig(durable_name="lazy", ack_wait=3600))

    nats.run(setup)
    trace, _ = exported_run(nats, tmp_path, 20000)
    summary, _out, err = finish(trace)
    x = summary["export"]
    assert x["export_dropped_by_reason"]["refused"] > 0, x
    assert any("refuses messages" in n for n in notes(err.splitlines()))
    check_invariant(summary, 20000, read_stream(nats), "h1")


def test_unreachable_at_start_is_one_line(nats: NatsServer, tmp_path: Path) -> None:
    import subprocess

    from tests.helpers.paths import RINGTOOL, ROOT
    from tests.helpers.servers import free_port

    url = f"nats://127.0.0.1:{free_port()}"
    p = subprocess.run([*RINGTOOL, "trace", "--json", "-d", "1", "--events", "open",
                        "--export", url], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"ringtool trace: --export {url}")
    assert "Traceback" not in p.stderr

    comm = unique_comm()
    target = tmp_path / "hot"
    target.write_text("x")
    trace = Trace("--json", "-c", comm, "--events", "open", "--export", url,
                  "--export-optional", "--export-drain", "0.5")  # fmt: skip
    work(comm, target, 3000)
    time.sleep(1.0)
    summary, _out, err = finish(trace)
    told = err.splitlines()  # the start line's notes and the note lines: stderr
    assert any("unreachable" in n and "--export-optional" in n for n in notes(told)) or any(
        "unreachable" in line for line in told[:1]
    )
    x = summary["export"]
    assert x["exported"] == 0
    assert x["export_dropped"] + summary["dropped"] + summary["lost"] == 3000
