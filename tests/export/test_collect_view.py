"""The collector's views on synthetic messages (no broker): the merged view keeps
timestamp order when hosts appear one after another, the fleet counts gaps and
duplicates from the lane sequence numbers."""

from __future__ import annotations

import io
import json

from ringtool.export.collect_view import MergedView
from ringtool.export.fleet import Fleet
from ringtool.export.reading import Received
from ringtool.export.seqset import SeqSet


def message(host: str, first: int, ts: list[int], cpu: int = 0) -> Received:
    """A checked message as the collector hands it to the views: lines with ``host``."""
    lines = [json.dumps({"host": host, "type": "open", "ts": t / 1e9, "cpu": cpu}) for t in ts]
    return Received(host, "boot", "run-" + host, "trace", "open", "jsonl/1", cpu, first,
                    len(ts), lines, ts)  # fmt: skip


def test_merged_view_orders_hosts_that_appear_late() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = MergedView(out, window_ms=2000, err=err)
    s = 1_000_000_000
    # web1's first batch, then db1 appears with older events, then web2, interleaved
    view.message(message("web1", 1, [10 * s + i * 1000 for i in range(50)]))
    view.message(message("db1", 1, [9 * s + i * 1000 for i in range(50)]))
    view.message(message("web1", 51, [13 * s + i for i in range(50)]))
    view.message(message("web2", 1, [11 * s + i for i in range(50)]))
    view.message(message("db1", 51, [14 * s + i for i in range(50)]))
    view.close(Fleet())
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(rows) == 250
    ts = [r["ts"] for r in rows]
    assert ts == sorted(ts)
    assert {r["host"] for r in rows} == {"web1", "db1", "web2"}
    assert json.loads(err.getvalue())["out_of_order"] == 0


def test_fleet_gaps_and_duplicates() -> None:
    fleet = Fleet()
    fleet.add(message("h", 1, [1, 2, 3]), 100)
    fleet.add(message("h", 7, [7, 8]), 100)  # 4..6 never came: export drops
    fleet.add(message("h", 2, [2, 3]), 100)  # a redelivery
    rec = fleet.records()[0]
    assert rec["events"] == 7 and rec["gaps"] == 3 and rec["duplicates"] == 2
    s = SeqSet()
    s.add(5, 9)
    s.add(1, 4)
    assert s.iv == [[1, 9, 0, 0]] and s.gaps == 0 and s.duplicates == 0
