"""The `disk` event kind (bpf/trace_disk.c) through the schema, on hand-built records:
its own record struct viewed from the rings' ``struct trace_event`` rows, its fields in
every output (decoding, JSON lines, ``--fields``, columns, the KMES payloads, the
export's rows), blktrace's ``rwbs`` letters by operation, and the per-device
histograms of ``--hist``."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event import disk_data
from ringtool.event.decode import Decoder
from ringtool.event.detail import detail
from ringtool.event.fields import FIELD_NAMES
from ringtool.event.json_lines import batch_text, json_lines
from ringtool.event.kmes_types import TRACE_EVENT_BASE, TracePayloads
from ringtool.event.layout import TRACE_HEADER, LayoutError, load_layout, parse_layout
from ringtool.event.records import Records
from ringtool.export.wire import compact_rows, expand_rows
from ringtool.trace.reading.latency_buckets import MAX_ERROR, bucket_of
from ringtool.trace.report.hist import hist_lines, hist_records
from ringtool.trace.writers.output_columns import ColumnOutput, format_event
from ringtool.trace.writers.output_fields import field_rows
from tests.helpers.stats import new_stats

LAYOUT = load_layout()
DISK = LAYOUT.type_id("disk")
OPEN = LAYOUT.type_id("open")
Array = np.ndarray[Any, Any]
#: a device no machine has: major 4095 (the kernel's dev_t has 12 bits of it)
NOWHERE = 4095 << 20 | 7


def disk_rows(n: int = 1, **values: Any) -> Array:
    """``n`` rows as the rings hold them (``struct trace_event``), each a disk record."""
    arr = np.zeros(n, dtype=LAYOUT.event)
    rec = arr.view(LAYOUT.views[DISK])
    rec["h"]["type"] = DISK
    rec["h"]["pid"] = 4242
    rec["h"]["comm"] = b"dd"
    rec["uid"] = 1000
    rec["dev"] = NOWHERE
    rec["sector"] = 2048
    rec["bytes"] = 65536
    rec["rwbs"] = b"WS"
    rec["queue_ns"] = 1_500
    rec["service_ns"] = 123_456
    rec["pad"] = 0x5A  # stale bytes of the ring: no field reads them
    for key, value in values.items():
        (rec["h"] if key in ("pid", "comm") else rec)[key] = value
    return arr


def test_the_record_is_a_ring_record_of_its_own_struct() -> None:
    view = LAYOUT.views[DISK]
    assert view.itemsize == LAYOUT.event.itemsize and LAYOUT.type_names[DISK] == "disk"
    assert {"dev", "disk", "op", "sync", "sector", "bytes", "service_us"} <= set(FIELD_NAMES)


def test_a_record_struct_of_another_size_is_refused() -> None:
    text = TRACE_HEADER.read_text()
    bad = text.replace("u8 pad[TRACE_DISK_PAD];", "u8 pad[8];")
    assert bad != text
    with pytest.raises(LayoutError, match="trace_disk"):
        parse_layout(bad)


def test_decoding_names_the_device_operation_and_issuer() -> None:
    ev = Decoder(LAYOUT, realtime_offset_ns=0).decode(disk_rows())[0]
    assert ev["type"] == "disk" and ev["pid"] == 4242 and ev["comm"] == "dd"
    assert (ev["dev"], ev["disk"], ev["op"], ev["sync"], ev["rwbs"]) == (
        "4095:7", "", "write", True, "WS")  # fmt: skip
    assert (ev["sector"], ev["bytes"], ev["queue_us"], ev["service_us"]) == (2048, 65536,
                                                                            1.5, 123.5)  # fmt: skip
    assert detail(ev) == "4095:7 write WS 65536 B @2048 0.123 ms q=0.002 ms"
    failed = Decoder(LAYOUT, realtime_offset_ns=0).decode(disk_rows(rwbs=b"R", error=-5))[0]
    assert failed["sync"] is False and detail(failed).endswith(" = -5")


def test_a_device_by_its_name_where_sysfs_has_it(tmp_path: Path) -> None:
    os.symlink("../../devices/virtual/block/loop3", tmp_path / "7:3")
    assert disk_data.disk_name(7 << 20 | 3, str(tmp_path)) == "loop3"
    assert disk_data.disk_name(7 << 20 | 4, str(tmp_path)) == ""
    assert disk_data.major_minor(259 << 20 | 1) == (259, 1)


@pytest.mark.parametrize(
    ("rwbs", "op", "sync"),
    [("R", "read", False), ("RA", "read", False), ("WS", "write", True),
     ("FWS", "write", True), ("FWFS", "write", True), ("F", "flush", False),
     ("FF", "flush", False), ("FS", "flush", True), ("D", "discard", False),
     ("DE", "secure-erase", False), ("N", "other", False), ("", "", False)],
)  # fmt: skip
def test_rwbs_letters_by_operation(rwbs: str, op: str, sync: bool) -> None:
    """As block/blk-core.c's blk_fill_rwbs writes them: a preflush F, the operation,
    then the flags (F: FUA, A, S, M)."""
    assert (disk_data.op(rwbs), disk_data.sync(rwbs)) == (op, sync)


@given(st.sampled_from("RWDFN"), st.booleans(), st.sets(st.sampled_from("FASM")))
def test_every_operation_read_back_from_its_letters(letter: str, preflush: bool,
                                                    flags: set[str]) -> None:  # fmt: skip
    rwbs = ("F" if preflush else "") + letter + "".join(f for f in "FASM" if f in flags)
    assert disk_data.op(rwbs) == disk_data.OPS[letter]
    assert disk_data.sync(rwbs) == ("S" in flags)


def test_json_and_fields_carry_the_disk_fields_in_a_mixed_batch() -> None:
    other = np.zeros(1, dtype=LAYOUT.event)
    other["h"]["type"] = OPEN
    other["data"] = b"/etc/hosts"
    arr = np.concatenate([disk_rows(), other, disk_rows(rwbs=b"R", bytes=4096)])
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    objs = [json.loads(line) for line in json_lines(dec, arr)]
    assert [o["type"] for o in objs] == ["disk", "open", "disk"]
    assert objs[0] == {**dec.decode(arr[:1])[0], "ts": objs[0]["ts"]}
    assert (objs[2]["op"], objs[2]["bytes"]) == ("read", 4096)
    chosen = batch_text(dec, Records(arr[::2]), ["pid", "dev", "op", "service_us"])
    assert [json.loads(x) for x in chosen.splitlines()] == [
        {"pid": 4242, "dev": "4095:7", "op": "write", "service_us": 123.5},
        {"pid": 4242, "dev": "4095:7", "op": "read", "service_us": 123.5},
    ]  # fmt: skip
    rows = field_rows(dec, Records(arr), ["type", "op", "bytes", "path"])
    assert [r[:3] for r in rows[::2]] == [("disk", "write", 65536), ("disk", "read", 4096)]
    assert rows[1][::3] == ("open", "/etc/hosts")
    out = io.StringIO()
    ColumnOutput(out, dec, width=None).batch(Records(arr))
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "write WS 65536 B @2048" in lines[0]


def test_a_kmes_payload_decodes_to_the_disk_fields() -> None:
    got = TracePayloads().decode(TRACE_EVENT_BASE + DISK, disk_rows().tobytes())
    name, fields = got or ("", {})
    assert name == "disk" and (fields["dev"], fields["op"], fields["bytes"]) == (
        "4095:7", "write", 65536)  # fmt: skip


def test_the_columns_show_the_detail_printable() -> None:
    ev = Decoder(LAYOUT, realtime_offset_ns=0).decode(disk_rows(rwbs=b"\x1b[2J"))[0]
    text = format_event(ev, None)
    assert "disk" in text and "65536 B @2048" in text and "\x1b" not in text


def test_export_rows_keep_the_fields() -> None:
    arr = disk_rows(2)
    kept = LAYOUT.data_kept("disk")
    assert kept is not None
    keep, body = compact_rows(arr, kept)
    back = expand_rows(body, 2, keep, LAYOUT.event)
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    assert dec.decode(back) == dec.decode(arr)


def test_end_histograms_per_device_text_and_json() -> None:
    st_ = new_stats()
    fast, slow = bucket_of(100_000), bucket_of(900_000)
    st_.tick(disk_hist={NOWHERE: {fast: 99, slow: 1}}, now=1.0)
    text = list(hist_lines(st_))
    assert text[:3] == ["", "disk 4095:7: 100 requests, service time p99 99µs",
                        "             nsecs : count     distribution"]  # fmt: skip
    assert text[3].split() == ["65536", "->", "131071", ":", "99", f"|{'*' * 40}|"]
    assert text[-1].split()[:5] == ["524288", "->", "1048575", ":", "1"]
    (rec,) = hist_records(st_)
    assert rec["dev"] == "4095:7" and rec["disk"] == "" and rec["count"] == 100
    assert rec["p99_max_error"] == MAX_ERROR and sum(n for *_, n in rec["buckets"]) == 100
    low, high, _ = rec["buckets"][0]
    assert low <= 100_000 <= high
