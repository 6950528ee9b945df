"""``trace --export`` and ``collect`` against a three-node JetStream cluster, one node
killed (SIGKILL) and restarted mid-run.

The exporter is given the three servers (``--export a,b,c``) and creates the stream
with three replicas; the cluster keeps a quorum with two nodes. Whichever node dies
(the stream's leader, or a follower), the export invariant holds exactly:
generated = exported + export_dropped + dropped + lost, the stream holding exactly the
exported events, none twice; and ``collect``, reading while it happens, reads every
event once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.cluster import NatsCluster, nats_cluster
from tests.helpers.export import Collect, finish, notes, wait_exported, work
from tests.helpers.paths import RINGTOOL
from tests.helpers.stream_check import check_invariant, read_stream
from tests.helpers.trace import Trace, Worker, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "cluster") as c:
        yield c


def start_trace(cluster: NatsCluster, comm: str) -> Trace:
    return Trace("--json", "--stats", "-c", comm, "--events", "open", "--interval", "0.5",
                 "--buffer-pages", "2048", "--export", cluster.url,
                 "--host-name", "h1")  # fmt: skip


def victim(cluster: NatsCluster, role: str) -> int:
    """The node to kill: the stream's leader, a follower (not the exporter's node when
    another is), the node the exporter (``trace``) is connected to made the stream's
    leader, the node ``collect`` is connected to, or the leader of its consumer made
    another node (collect's fetches then find no responder until the consumer has a
    leader again: nats-server 2.10 answers them 503)."""
    c = cluster.stream_cluster()
    if role == "leader":
        return cluster.index(c.leader)
    if role == "follower":
        followers = [cluster.index(p.name) for p in c.replicas]
        mine = cluster.serving("ringtool")
        return next((i for i in followers if i != mine), followers[0])
    if role == "exporter-leader":  # its node leads the stream: the stream is without
        node = cluster.serving("ringtool")  # a leader when the exporter reconnects
        cluster.make_leader(node)
        return node
    if role == "collector":
        return cluster.serving("ringtool-collect")
    assert role == "consumer-leader", role  # not collect's node: its connection stays
    cluster.make_consumer_leader_other_than(cluster.serving("ringtool-collect"), "ringtool-collect")
    return cluster.consumer_leader("ringtool-collect")


def consumer_state(cluster: NatsCluster) -> str:
    """The durable consumer's state as the cluster tells it (for a failure's message)."""
    try:
        info = cluster.consumer_info("ringtool-collect")
    except Exception as exc:  # the message of a failing test: whatever the cluster says
        return f"consumer info failed: {exc!r}"
    return (
        f"pending {info.num_pending} ack_pending {info.num_ack_pending} "
        f"delivered {info.delivered} ack_floor {info.ack_floor} cluster {info.cluster}"
    )


def exporting(cluster: NatsCluster, tmp_path: Path) -> tuple[Trace, str, Path]:
    """A ``trace --export`` to the three servers that exported its first 5000 events;
    the trace, its comm and the file its workers open."""
    comm, target = unique_comm(), tmp_path / "hot"
    target.write_text("x")
    trace = start_trace(cluster, comm)
    work(comm, target, 5000)
    wait_exported(trace, 5000)
    return trace, comm, target


def kill_and_restart_mid_run(cluster: NatsCluster, comm: str, target: Path, role: str) -> None:
    """30000 opens with node ``role`` killed while they run, 10000 while it is down,
    10000 after it came back and caught up."""
    cluster.wait_current()
    node = victim(cluster, role)
    w = Worker(comm, "open", target, 30000)
    w.go()
    time.sleep(0.05)
    cluster.kill(node)
    w.wait()
    work(comm, target, 10000)
    time.sleep(1.0)
    cluster.restart(node)
    cluster.wait_current()
    work(comm, target, 10000)


@pytest.mark.parametrize("role", ["leader", "follower", "exporter-leader"])
def test_export_to_a_cluster_survives_a_node_killed(
    cluster: NatsCluster, tmp_path: Path, role: str
) -> None:
    trace, comm, target = exporting(cluster, tmp_path)
    assert len(cluster.stream_cluster().replicas) == 2  # three copies, created by ringtool
    kill_and_restart_mid_run(cluster, comm, target, role)
    try:
        wait_exported(trace, 55000, timeout=120)
    finally:
        print("\n".join(notes(trace.err_lines)))
    summary, _out, err = finish(trace)
    said = notes(err.splitlines())  # notes: stderr
    assert any("3 replicas" in n for n in said), said
    # it lost its connection only if it was connected to the killed node, then once
    lost = sum("lost the connection" in n for n in said)
    assert lost == 1 if role == "exporter-leader" else lost <= 1, said
    content = read_stream(cluster.leader())
    check_invariant(summary, 55000, content, "h1")
    x = summary["export"]
    assert x["export_dropped"] == 0, x  # nothing lost: the other two nodes stored it
    assert content.count("h1") == x["exported"] == 55000 - summary["dropped"] - summary["lost"]
    assert x["export_duplicates"] <= x["export_resends"], x


@pytest.mark.parametrize("role", ["collector", "consumer-leader"])
def test_collect_reads_every_event_once_across_a_node_killed(
    cluster: NatsCluster, tmp_path: Path, role: str
) -> None:
    trace, comm, target = exporting(cluster, tmp_path)
    col = Collect([*RINGTOOL, "collect", cluster.url, "--json", "--interval", "0.3"])

    def h1() -> dict:  # type: ignore[type-arg]
        for line in reversed(col.lines):
            rec = json.loads(line)
            if rec.get("host") == "h1":
                return rec  # type: ignore[no-any-return]
        return {"events": -1, "duplicates": 0}

    def wait_for(cond: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 120
        while not cond():
            assert col.proc.poll() is None, (what, col.stderr())
            assert time.monotonic() < deadline, (
                what,
                h1(),
                col.lines[-2:],
                col.stderr(),
                consumer_state(cluster),
                cluster.log_tails(),
            )
            time.sleep(0.1)

    try:
        wait_for(lambda: h1()["events"] > 0, "collect reads")
        kill_and_restart_mid_run(cluster, comm, target, role)
        wait_exported(trace, 55000, timeout=120)
        summary, _, _ = finish(trace)
        want = summary["export"]["exported"]
        wait_for(lambda: h1()["events"] - h1()["duplicates"] >= want, "collect read all")
    finally:
        err = col.stop()
    final = json.loads(col.lines[-1])["per_host"]["h1"]
    assert final["duplicates"] == 0, (final, err)
    assert final["events"] == want and final["gaps"] == 0, final


def test_the_cluster_is_gone_after_a_failure(tmp_path: Path) -> None:
    """The fixture's promise: whatever ends the test, no node outlives it and its
    directory is removed."""
    procs = []
    with pytest.raises(RuntimeError, match="the test failed"), nats_cluster(tmp_path / "c") as c:
        procs = [n.proc for n in c.nodes]
        assert all(p is not None and p.poll() is None for p in procs)
        raise RuntimeError("the test failed")
    assert procs and all(p is not None and p.poll() is not None for p in procs)
    assert not (tmp_path / "c").exists()
