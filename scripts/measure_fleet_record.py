#!/usr/bin/env python3
"""What ``collect --record`` and the fleet's busiest view cost per event, on hand-built
batches (no broker, no kernel): the recorder's write of 8192-row ``rows/1`` batches of
opens into a partition, the Parquet seal of the file at its close, the bytes per
event of the sealed file; the same opens as the ``jsonl/1`` messages the exporter's
encoder makes of them (the default format), written by the recorder, and the parts
of turning their lines into records (:mod:`ringtool.trace.writers.fleet_lines`: the
pyarrow parse, the columns into records, the encoding again that checks them);
:class:`~ringtool.export.busiest.Busiest` over ``tcp`` records of all-distinct
connections and over ``disk`` records. CPU time of this process
(``time.process_time``), per event. Run from the checkout root:

    PYTHONPATH=$PWD python3 scripts/measure_fleet_record.py --batches 60
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.event.decode import Decoder
from ringtool.event.json_lines import batch_text
from ringtool.event.layout import load_layout
from ringtool.event.line_columns import line_schema, parse_lines
from ringtool.event.line_records import to_records
from ringtool.event.records import Records
from ringtool.event.syscalls import syscall_namer
from ringtool.export.busiest import Busiest
from ringtool.export.fleet import Fleet
from ringtool.export.reading import Received
from ringtool.export.wire import JSONL, Batch, Encoder, Origin
from ringtool.trace.writers.fleet_record import FleetRecorder
from tests.helpers.busy_records import disk_records, tcp_records

ROWS = 8192
OFFSET = 1_765_000_000 * 10**9


def opens(i: int, rng: np.random.Generator) -> np.ndarray:  # type: ignore[type-arg]
    """A batch of open records: 977 distinct paths, random pids and returns."""
    layout = load_layout()
    a = np.zeros(ROWS, layout.event)
    a["h"]["type"] = layout.type_id("open")
    a["h"]["ts"] = 10**12 + i * ROWS + np.arange(ROWS)
    a["h"]["pid"] = rng.integers(1, 5000, ROWS)
    a["h"]["comm"] = b"python3"
    a["data"] = [f"/usr/lib/python3/dist-packages/mod{j % 977}.py".encode() for j in range(ROWS)]
    a["ret"] = rng.integers(-2, 20, ROWS)
    return a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=60)
    args = ap.parse_args()
    layout, rng = load_layout(), np.random.default_rng(1)
    batches = [opens(i, rng) for i in range(args.batches)]
    n = ROWS * args.batches
    with tempfile.TemporaryDirectory() as tmp:
        rec = FleetRecorder(Path(tmp), layout, note=print)
        t0 = time.process_time()
        for i, a in enumerate(batches):
            rec.message(Received("web1", "boot", "run", "trace", "open", "rows/1", cpu=0,
                                 first=1 + i * ROWS, count=ROWS, records=Records(a),
                                 offset_ns=OFFSET))  # fmt: skip
        t1 = time.process_time()
        rec.close(Fleet())
        t2 = time.process_time()
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*.parquet"))
    print(f"record: write {1e9 * (t1 - t0) / n:,.0f} ns/event, seal "
          f"{1e9 * (t2 - t1) / n:,.0f} ns/event, Parquet {size / n:.1f} bytes/event")  # fmt: skip
    json_costs(layout, batches)
    conns = [(f"10.0.{i % 200}.{i % 250}", 40000 + i % 3000, "10.9.0.9", 443, i, i, i, b"c")
             for i in range(ROWS)]  # fmt: skip
    tcp, disk = tcp_records(conns), disk_records([(8, i % 4, 4096, 1000 + i) for i in range(ROWS)])
    b = Busiest()
    t0 = time.process_time()
    for _ in range(20):
        b.add_records(Records(tcp), layout)
    t1 = time.process_time()
    for _ in range(20):
        b.add_records(Records(disk), layout)
    t2 = time.process_time()
    per = 1e9 / (20 * ROWS)
    print(f"busiest: tcp {(t1 - t0) * per:,.0f} ns/event ({len(b.conns)} connections), "
          f"disk {(t2 - t1) * per:,.0f} ns/event")  # fmt: skip


def json_costs(layout: Any, batches: list[np.ndarray]) -> None:  # type: ignore[type-arg]
    """The opens as the exporter's ``jsonl/1`` messages: written by the recorder, and
    the parts of :meth:`LineRecords.convert` on the same lines."""
    dec = Decoder(layout, syscall_namer(), realtime_offset_ns=OFFSET)
    enc = Encoder(Origin("web2", "boot", "run", "trace", OFFSET), "json", "ringtool", dec)
    msgs = [m for i, a in enumerate(batches)
            for m in enc.encode(Batch(0, "open", 1 + i * ROWS, ROWS, a, a.nbytes))]  # fmt: skip
    lines = [m.body.decode().split("\n")[:-1] for m in msgs]
    n = sum(map(len, lines))
    with tempfile.TemporaryDirectory() as tmp:
        rec = FleetRecorder(Path(tmp), layout, note=print)
        t0 = time.process_time()
        first = 1
        for part in lines:
            rec.message(Received("web2", "boot", "run", "trace", "open", JSONL, cpu=0,
                                 first=first, count=len(part), lines=part,
                                 offset_ns=OFFSET))  # fmt: skip
            first += len(part)
        t1 = time.process_time()
        rec.close(Fleet())
        recorded = sum(b.recorded for b in rec.books["web2"].values())
    assert recorded == n, (recorded, n)
    schema = line_schema(layout, "open")
    bodies = [m.body for m in msgs]
    t2 = time.process_time()
    tables = [parse_lines(b, schema) for b in bodies]
    t3 = time.process_time()
    built = [to_records(layout, "open", t, OFFSET).rec for t in tables]
    t4 = time.process_time()
    for r in built:
        batch_text(dec, Records(r), None)
    t5 = time.process_time()
    per = 1e9 / n
    print(f"record jsonl/1: write {(t1 - t0) * per:,.0f} ns/event ({len(msgs)} messages of "
          f"{n // len(msgs)} lines, {sum(map(len, bodies)) / n:.0f} bytes/line); of it: "
          f"parse {(t3 - t2) * per:,.0f}, records {(t4 - t3) * per:,.0f}, "
          f"check {(t5 - t4) * per:,.0f} ns/event")  # fmt: skip


if __name__ == "__main__":
    main()
