"""Packets that name their TCP connection's process (docs/trace.md, "Packets and their
processes"), decoded from hand-built ``struct trace_net`` samples: the owner's pid,
tid, comm, cgroup (the header) and uid (``owner_uid``) reach every output -- JSON
lines, ``--fields``, CSV, columns, a recording's rows and back and ``ringtool
query``'s ``net`` view, the KMES payload and the export's rows (both the raw sample)
-- and a packet of no known connection keeps
pid 0 and ``[net]``."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import numpy as np

from ringtool.event.arrow_records import RecordSchema
from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.export.wire import SAMPLE_LEN, net_rows
from ringtool.trace.writers.output_columns import ColumnOutput
from ringtool.trace.writers.output_fields import CsvOutput
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.net_records import LAYOUT, net_records, net_sample
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.recordings import write_recording

TCP = {"src": "10.1.0.1", "dst": "10.1.0.2", "sport": 80, "dport": 40000, "proto": 6,
       "len": 1500, "dir": "egress", "ts": 10**9}  # fmt: skip
OWNED = net_sample(pid=812, tid=813, comm=b"nginx", cgroup=9, uid=33, **TCP)
NONE = net_sample(src="10.1.0.1", dst="10.1.0.9", sport=53, dport=5353, proto=17, len=80)
KEYS = ["type", "pid", "tid", "comm", "cgroup", "uid", "sport"]


def _records() -> tuple[Decoder, Records]:
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    return dec, Records(np.empty(0, LAYOUT.event), net_records([OWNED, NONE], dec))


def test_json_and_fields_name_the_owner() -> None:
    dec, records = _records()
    buf, some = io.StringIO(), io.StringIO()
    JsonOutput(buf, dec).batch(records)
    JsonOutput(some, dec, KEYS).batch(records)
    owned, none = (json.loads(line) for line in buf.getvalue().splitlines())
    assert {k: owned[k] for k in KEYS[1:]} == {"pid": 812, "tid": 813, "comm": "nginx",
                                               "cgroup": 9, "uid": 33, "sport": 80}  # fmt: skip
    assert {k: none[k] for k in KEYS[1:]} == {"pid": 0, "tid": 0, "comm": "[net]", "cgroup": 0,
                                              "uid": 0, "sport": 53}  # fmt: skip
    assert "gid" not in owned  # a packet has its owner's uid only
    assert [json.loads(line) for line in some.getvalue().splitlines()] == [
        {k: owned[k] for k in KEYS}, {k: none[k] for k in KEYS}]  # fmt: skip


def test_csv_and_columns_name_the_owner() -> None:
    dec, records = _records()
    buf = io.StringIO(newline="")
    out = CsvOutput(buf, dec, KEYS, err=io.StringIO(), terminal=False)
    out.start(["net"], [])
    out.batch(records)
    rows = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    assert rows == [KEYS, ["net", "812", "813", "nginx", "9", "33", "80"],
                    ["net", "0", "0", "[net]", "0", "0", "53"]]  # fmt: skip
    text = io.StringIO()
    ColumnOutput(text, dec, err=io.StringIO()).batch(records)
    owned, none = (line.split() for line in text.getvalue().splitlines())
    assert owned[2:6] == ["812", "33", "nginx", "net"]  # TS (2 words), CPU, PID, UID, COMM
    assert none[2:6] == ["0", "0", "[net]", "net"]


def test_recording_rows_kmes_and_export_keep_the_owner() -> None:
    _, records = _records()
    schema = RecordSchema(LAYOUT)
    batch = schema.to_arrow(records, 0)
    assert batch.column("owner_uid").to_pylist() == [33, 0]
    assert batch.column("pid").to_pylist() == [812, 0]
    back = schema.from_arrow(batch).net
    assert (back.rec == records.net.rec).all()
    samples = [records.net.sample(i) for i in range(2)]  # the KMES payloads
    heads = np.frombuffer(b"".join(s[: LAYOUT.net.itemsize] for s in samples), LAYOUT.net)
    assert heads["owner_uid"].tolist() == [33, 0] and heads["h"]["pid"].tolist() == [812, 0]
    assert net_rows(records.net) == b"".join(SAMPLE_LEN.pack(len(s)) + s for s in samples)


def test_query_net_view_names_the_owner(tmp_path: Path) -> None:
    """``ringtool query``'s ``net`` view: the owner's pid, comm and ``uid``."""
    _, records = _records()
    path = tmp_path / "r.arrows"
    path.write_bytes(write_recording([records], summary={"type": "summary", "events": 2}))
    res = subprocess.run(
        [*RINGTOOL, "query", str(path), "--json", "SELECT pid, tid, comm, uid, sport FROM net"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows == [{"pid": 812, "tid": 813, "comm": "nginx", "uid": 33, "sport": 80},
                    {"pid": 0, "tid": 0, "comm": "", "uid": 0, "sport": 53}]  # fmt: skip
