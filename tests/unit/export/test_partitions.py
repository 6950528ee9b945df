"""``collect --record DIR`` without a broker: the Hive layout (a batch cut by the hour of
each record's wall-clock time), the files and directories it makes (0600, 0700, no
symbolic link followed), rotation, Parquet sealing, the accounting beside the events,
and a stream cut anywhere reading back to its last whole batch."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.errors import UsageError
from ringtool.event.decode import Decoder
from ringtool.event.json_lines import batch_text
from ringtool.event.records import NetRecords, Records
from ringtool.export.fleet import Fleet
from ringtool.export.partitions import HOUR_NS, hour_dirs, partition_values, split_by_hour
from ringtool.export.reading import Received
from ringtool.trace.writers.fleet_lines import NOT_JSON, NOT_OF_TYPE
from ringtool.trace.writers.fleet_record import MAX_OPEN, FleetRecorder
from tests.helpers.busy_records import LAYOUT
from tests.helpers.partitions import accounting, host_lines, modes
from tests.helpers.records import SETTINGS, header_records

OFFSET = 1_765_000_000 * 10**9  # 2025-12-06 05:46:40 UTC
BASE = (OFFSET // HOUR_NS + 1) * HOUR_NS - OFFSET  # ts of the next hour's start


def opens(ts: list[int], pid0: int = 100) -> Records:
    return Records(header_records([{"type": "open", "ts": t, "pid": pid0 + i, "comm": b"cat"}
                                   for i, t in enumerate(ts)]))  # fmt: skip


def message(host: str, recs: Records, run: str = "r1") -> Received:
    return Received(host, "b1", run, "trace", "open", "rows/1", cpu=0, first=1,
                    count=len(recs), records=recs, offset_ns=OFFSET)  # fmt: skip


def test_hour_dirs_are_hive_names_of_utc_time() -> None:
    assert hour_dirs("web1", OFFSET // HOUR_NS) == ("host=web1", "date=2025-12-06", "hour=05")
    assert hour_dirs("db-2", 0) == ("host=db-2", "date=1970-01-01", "hour=00")
    p = Path("/d/host=web1/date=2025-12-06/hour=05/r.0001.parquet")
    assert partition_values(p, Path("/d")) == {"host": "web1", "date": "2025-12-06", "hour": "05"}


@SETTINGS
@given(st.lists(st.integers(-3 * HOUR_NS, 3 * HOUR_NS), max_size=40))
def test_split_by_hour_keeps_every_record_once_in_its_hour(deltas: list[int]) -> None:
    ts = [BASE + d for d in deltas if BASE + d >= 0]
    recs = opens(ts)
    parts = split_by_hour(recs, OFFSET)
    assert [h for h, _ in parts] == sorted({(t + OFFSET) // HOUR_NS for t in ts})
    got = np.concatenate([p.events for _, p in parts]) if parts else recs.events[:0]
    assert sorted(got["h"]["pid"].tolist()) == sorted(recs.events["h"]["pid"].tolist())
    for hour, p in parts:
        assert (((p.events["h"]["ts"].astype(np.int64) + OFFSET) // HOUR_NS) == hour).all()
        pids = p.events["h"]["pid"].tolist()
        assert pids == sorted(pids)  # in the order they came


def test_split_by_hour_cuts_packets_with_their_bytes() -> None:
    samples = []
    for i, t in enumerate((BASE - 1, BASE, BASE + 1)):
        head = np.zeros(1, LAYOUT.net)
        head["h"]["ts"], head["captured"], head["len"] = t, 3, 3
        samples.append((0, head.tobytes() + bytes([i]) * 3))
    net = NetRecords.from_samples(LAYOUT.net, LAYOUT.type_id("net"), samples)
    parts = split_by_hour(Records(np.zeros(0, LAYOUT.event), net), OFFSET)
    assert [len(p.net) for _, p in parts] == [1, 2]
    assert [p.net.payload(i) for _, p in parts for i in range(len(p.net))] == [
        b"\0\0\0", b"\1\1\1", b"\2\2\2"]  # fmt: skip


def test_recorder_writes_private_hive_partitions_sealed_as_parquet(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    r = FleetRecorder(root, LAYOUT, note=lambda _t: None)
    r.message(message("web1", opens([BASE - 5, BASE - 4, BASE + 7])))  # straddles an hour
    r.message(message("web2", opens([BASE + 1], pid0=900)))
    r.message(Received("web1", "b1", "r1", "trace", "stats", "stats/1",
                       stats={"kind": "summary", "exported": 3, "export_dropped": 0}))  # fmt: skip
    json_line = batch_text(Decoder(LAYOUT, realtime_offset_ns=OFFSET), opens([BASE + 3]), None)
    r.message(Received("web2", "b1", "r9", "trace", "open", "jsonl/1", cpu=0, first=1, count=3,
                       lines=["{}", json_line[:-1], '{"type": "stats"}'],
                       offset_ns=OFFSET))  # fmt: skip
    fleet = Fleet()
    r.close(fleet)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet"))
    assert files == ["host=web1/date=2025-12-06/hour=05/r1.0001.parquet",
                     "host=web1/date=2025-12-06/hour=06/r1.0001.parquet",
                     "host=web2/date=2025-12-06/hour=06/r1.0001.parquet",
                     "host=web2/date=2025-12-06/hour=06/r9.0001.parquet"]  # fmt: skip
    assert not list(root.rglob("*.arrows")) and not list(root.rglob(".*"))
    assert modes(root) == {("dir", 0o700), ("file", 0o600)}
    assert (root.stat().st_mode & 0o777) == 0o700
    lines = host_lines(root)
    assert sorted(len(v) for v in lines.values()) == [2, 3]
    assert json_line[:-1] in lines["web2"]  # jsonl/1: its event line recorded as it was
    a1, a2 = accounting(root, "web1"), accounting(root, "web2")
    assert a1["recorded"] == 3 and a1["runs"]["b1/r1"]["exported"] == 3
    assert a2["recorded"] == 2 and a2["rejected"] == 1  # the other lines counted
    assert a2["runs"]["b1/r9"] == {"recorded": 1, "rejected": 1,
                                   "rejected_by_reason": {NOT_OF_TYPE: 1},
                                   "non_event": {"stats": 1}}  # fmt: skip
    again = FleetRecorder(root, LAYOUT, note=lambda _t: None)  # a later collector adds to it
    again.message(Received("web2", "b1", "r9", "trace", "open", "jsonl/1", cpu=0, first=4,
                           count=1, lines=["x"], offset_ns=OFFSET))  # fmt: skip
    again.close(Fleet())
    assert accounting(root, "web2")["runs"]["b1/r9"]["rejected_by_reason"] == {
        NOT_OF_TYPE: 1, NOT_JSON: 1}  # fmt: skip


def test_rotation_on_size_and_numbers_free_in_the_partition(tmp_path: Path) -> None:
    r = FleetRecorder(tmp_path, LAYOUT, rotate_bytes=1, note=lambda _t: None)
    for i in range(3):
        r.message(message("web1", opens([BASE + i])))
    r.close(Fleet())
    names = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    assert names == ["r1.0001.parquet", "r1.0002.parquet", "r1.0003.parquet"]
    r = FleetRecorder(tmp_path, LAYOUT, note=lambda _t: None)  # a later collector
    r.message(message("web1", opens([BASE + 9])))
    r.close(Fleet())
    assert len(list(tmp_path.rglob("r1.0004.parquet"))) == 1
    assert accounting(tmp_path, "web1")["recorded"] == 4  # added to what it found


def test_symbolic_links_are_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    root = tmp_path / "fleet"
    root.mkdir(mode=0o700)
    (root / "host=web1").symlink_to(elsewhere)
    r = FleetRecorder(root, LAYOUT, note=lambda _t: None)
    with pytest.raises(UsageError, match=r"host=web1.*symbolic link"):
        r.message(message("web1", opens([BASE])))
    assert not list(elsewhere.iterdir())
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    os.chmod(elsewhere, 0o777)
    with pytest.raises(UsageError, match="--record"):
        FleetRecorder(link, LAYOUT)  # a link as DIR itself: never followed


def test_a_stream_cut_anywhere_reads_back_to_its_last_whole_batch(tmp_path: Path) -> None:
    r = FleetRecorder(tmp_path, LAYOUT, note=lambda _t: None)
    sizes = []
    for i in range(4):
        r.message(message("web1", opens([BASE + 10 * i + j for j in range(5)], pid0=10 * i)))
        (f,) = r.open.values()
        sizes.append(f.writer.size)
    (path,) = tmp_path.rglob("*.arrows")  # a killed collector: never closed
    data = path.read_bytes()
    for cut in range(sizes[0], len(data) + 1, 97):
        path.write_bytes(data[:cut])
        got = host_lines(tmp_path, cut_ok=True)["web1"]
        assert len(got) == 5 * sum(1 for s in sizes if s <= cut)


def test_descriptors_are_bounded_by_the_open_files_not_the_hosts(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    r = FleetRecorder(tmp_path, LAYOUT, note=lambda _t: None)
    for i in range(MAX_OPEN + 40):
        r.message(message(f"h{i}", opens([BASE])))
    r.tick(Fleet())
    assert len(r.open) == MAX_OPEN
    # per open file: it and its directory; the root; the seal in progress (its
    # directories, the stream read by the checked reader, the new file): a few
    assert len(os.listdir("/proc/self/fd")) - before <= 2 * MAX_OPEN + 1 + 7
    r.close(Fleet())
    assert len(os.listdir("/proc/self/fd")) == before
    assert len(list(tmp_path.rglob("*.parquet"))) == MAX_OPEN + 40
