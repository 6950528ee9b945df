"""Net packets as records (:class:`ringtool.event.records.NetRecords`), read through
the field table: for arbitrary samples (hostile comm bytes, any family, captured
lengths the sample does not hold, padding, samples too short for the struct) every
output says what the per-packet decoder (kept in tests/helpers/net_records.py) made
of them, byte for byte; and the :class:`Records` type itself."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import FrozenInstanceError
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.decode import Decoder
from ringtool.event.json_lines import printable_line
from ringtool.event.records import NO_PACKETS, NetRecords, Records
from ringtool.export.batcher import Batcher
from ringtool.export.wire import SAMPLE_LEN, net_rows
from ringtool.trace.writers.output_columns import ColumnOutput, format_event
from ringtool.trace.writers.output_fields import CsvOutput, cell
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.net_records import (
    LAYOUT,
    PRIVATE,
    net_records,
    net_sample,
    old_decode_net,
    raw_sample,
)
from tests.helpers.records import OFFSETS, SETTINGS, record, record_array

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
samples_st = st.lists(raw_sample, max_size=12)


def _public(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ev.items() if k not in PRIVATE}


@SETTINGS
@given(samples=samples_st, offset=st.sampled_from(OFFSETS))
def test_packets_decode_as_the_per_packet_decoder_did(samples: list[bytes], offset: int) -> None:
    dec = Decoder(LAYOUT, realtime_offset_ns=offset)
    net = dec.net_records([(i % 3, s) for i, s in enumerate(samples)])
    old = old_decode_net(samples, offset)
    assert dec.malformed == len(samples) - len(old) == len(samples) - len(net)
    assert dec.decode(net.rec) == [_public(ev) for ev in old]
    assert [net.payload(i) for i in range(len(net))] == [ev["payload"] for ev in old]
    assert [net.sample(i) for i in range(len(net))] == [ev["raw"] for ev in old]  # KMES, rows


@SETTINGS
@given(
    samples=samples_st,
    records=st.lists(record, max_size=6),
    offset=st.sampled_from(OFFSETS),
    keys=st.one_of(st.none(), st.sampled_from([["type", "src", "comm", "ts"], ["len", "uid"]])),
)
def test_json_lines_of_packets_are_the_old_bytes(
    samples: list[bytes], records: list[tuple[Any, ...]], offset: int, keys: list[str] | None
) -> None:
    dec = Decoder(LAYOUT, realtime_offset_ns=offset)
    arr = record_array(records)
    net = net_records(samples, dec)
    buf, alone = io.StringIO(), io.StringIO()
    JsonOutput(buf, dec, keys).batch(Records(arr, net))
    JsonOutput(alone, dec, keys).batch(Records(arr))  # the events' lines did not change
    old = [
        {k: ev[k] for k in keys if k in ev} if keys else _public(ev)
        for ev in old_decode_net(samples, offset)
    ]
    want = alone.getvalue() + "".join(printable_line(_dumps(o)) + "\n" for o in old)
    assert buf.getvalue() == want


@SETTINGS
@given(samples=samples_st, width=st.sampled_from([None, 80, 40]))
def test_column_lines_of_packets_are_the_old_text(samples: list[bytes], width: int | None) -> None:
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    buf = io.StringIO()
    ColumnOutput(buf, dec, width=width, err=io.StringIO()).batch(
        Records(np.empty(0, LAYOUT.event), net_records(samples, dec))
    )
    old = old_decode_net(samples, 0)
    assert buf.getvalue() == "".join(format_event(ev, width) + "\n" for ev in old)


@SETTINGS
@given(samples=samples_st)
def test_csv_rows_of_packets_are_the_old_rows(samples: list[bytes]) -> None:
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    buf = io.StringIO(newline="")
    out = CsvOutput(buf, dec, err=io.StringIO(), terminal=False)
    out.start([], [])
    out.batch(Records(np.empty(0, LAYOUT.event), net_records(samples, dec)))
    want = io.StringIO(newline="")
    writer = csv.writer(want, lineterminator="\r\n")
    writer.writerow(out.keys)
    writer.writerows([cell(ev.get(k)) for k in out.keys] for ev in old_decode_net(samples, 0))
    assert buf.getvalue() == want.getvalue()


@SETTINGS
@given(samples=samples_st, cut=st.integers(0, 12), step=st.integers(1, 4))
def test_kept_packets_keep_their_bytes(samples: list[bytes], cut: int, step: int) -> None:
    """Copies (:meth:`NetRecords.take`, slices, :meth:`concat`), the export's lanes and
    its rows body hold each packet's sample as it was."""
    net = net_records(samples)
    whole = [net.sample(i) for i in range(len(net))]
    part = net[cut:]
    assert [part.sample(i) for i in range(len(part))] == whole[cut:]
    assert len(part.data) == sum(map(len, whole[cut:]))  # only its own samples
    both = net[:cut].concat(part)
    assert [both.sample(i) for i in range(len(both))] == whole
    assert (both.rec == net.rec).all()
    assert net_rows(net) == b"".join(SAMPLE_LEN.pack(len(s)) + s for s in whole)
    lanes = Batcher(LAYOUT.type_names, step).split(Records(np.empty(0, LAYOUT.event), net))
    cpus = net.rec["h"]["cpu"].tolist()
    for b in lanes:
        assert b.type == "net" and isinstance(b.data, NetRecords) and b.count == len(b.data)
        assert b.nbytes == sum(len(s) + 600 for s in (b.data.sample(i) for i in range(b.count)))
    for cpu in set(cpus):
        got = [b.data.sample(i) for b in lanes if b.cpu == cpu for i in range(b.count)]
        assert got == [s for s, c in zip(whole, cpus, strict=True) if c == cpu]


def test_records_hold_one_batch_of_both_forms() -> None:
    arr = record_array([(4, 10**12, 7, b"cat", b"/etc/passwd", b"", 0, 3, 0)])
    net = net_records([net_sample(b"abc", src="::1", dst="::2", ts=5, len=60, pad=b"\0" * 5)])
    both = Records(arr, net)
    assert len(both) == 2 and both.arrays() == (arr, net.rec)
    assert Records(arr).net is NO_PACKETS and len(Records(arr)) == 1
    assert Records(arr).arrays() == (arr,) and Records(arr[:0]).arrays() == ()
    assert net.payload(0) == b"abc" and net.sample(0) == net.rec.tobytes() + b"abc"
    assert net.rec["h"]["type"][0] == LAYOUT.type_id("net")
    ev = Decoder(LAYOUT, realtime_offset_ns=0).decode_records(both)
    assert [e["type"] for e in ev] == ["open", "net"]
    assert (ev[1]["src"], ev[1]["dst"], ev[1]["captured"]) == ("::1", "::2", 3)
    with pytest.raises(FrozenInstanceError):
        both.net = net  # type: ignore[misc]
    assert len(NetRecords.empty(LAYOUT.net)) == 0 and NO_PACKETS.take(slice(None)).data == b""


def test_a_header_that_claims_more_bytes_than_the_sample_holds_keeps_what_is_there() -> None:
    sample = net_sample(b"abcd", captured=1000)
    net = net_records([sample, sample[:-2], b"short"])
    assert len(net) == 2
    assert [net.payload(0), net.payload(1)] == [b"abcd", b"ab"]
