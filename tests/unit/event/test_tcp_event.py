"""The `tcp` event kind (bpf/trace_tcp.c) through the schema, on hand-built records:
its own record struct viewed from the rings' ``struct trace_event`` rows, its fields in
every output (decoding, JSON lines, ``--fields``, columns), and the export's rows,
which keep its fields although they lie where other types have a C string."""

from __future__ import annotations

import io
import json
import socket
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event import tcp_data
from ringtool.event.decode import Decoder
from ringtool.event.detail import detail
from ringtool.event.fields import FIELD_NAMES
from ringtool.event.json_lines import batch_text, json_lines
from ringtool.event.kmes_types import TRACE_EVENT_BASE, TracePayloads
from ringtool.event.layout import TRACE_HEADER, LayoutError, load_layout, parse_layout
from ringtool.event.records import Records
from ringtool.export.wire import compact_rows, expand_rows
from ringtool.trace.writers.output_columns import ColumnOutput, format_event
from ringtool.trace.writers.output_fields import field_rows
from tests.helpers.net_records import net_records, net_sample

LAYOUT = load_layout()
TCP = LAYOUT.type_id("tcp")
OPEN = LAYOUT.type_id("open")
Array = np.ndarray[Any, Any]


def v4(text: str) -> bytes:
    return b"\0" * 10 + b"\xff\xff" + socket.inet_aton(text)


def tcp_rows(n: int = 1, **values: Any) -> Array:
    """``n`` rows as the rings hold them (``struct trace_event``), each a tcp record."""
    arr = np.zeros(n, dtype=LAYOUT.event)
    rec = arr.view(LAYOUT.views[TCP])
    rec["h"]["type"] = TCP
    rec["h"]["pid"] = 4242
    rec["h"]["comm"] = b"curl"
    rec["uid"] = 1000
    rec["family"] = 4
    rec["saddr"] = np.frombuffer(v4("10.0.0.1"), np.uint8)
    rec["daddr"] = np.frombuffer(v4("10.0.0.2"), np.uint8)
    rec["sport"], rec["dport"] = 40000, 80
    rec["active"] = 1
    rec["tx_bytes"], rec["rx_bytes"] = 10_002, 3_001
    rec["duration_ns"] = 1_234_567
    rec["states"] = 0b10110110  # ESTABLISHED SYN_SENT FIN_WAIT1 FIN_WAIT2 CLOSE
    rec["pad"] = 0x5A  # stale bytes of the ring: no field reads them
    for key, value in values.items():
        (rec["h"] if key in ("pid", "comm") else rec)[key] = value
    return arr


def test_the_record_is_a_ring_record_of_its_own_struct() -> None:
    view = LAYOUT.views[TCP]
    assert view.itemsize == LAYOUT.event.itemsize and LAYOUT.type_names[TCP] == "tcp"
    assert {"laddr", "raddr", "tx_bytes", "states", "failed"} <= set(FIELD_NAMES)


def test_a_record_struct_of_another_size_is_refused() -> None:
    text = TRACE_HEADER.read_text()
    bad = text.replace("u8 pad[TRACE_TCP_PAD];", "u8 pad[8];")
    assert bad != text
    with pytest.raises(LayoutError, match="trace_tcp"):
        parse_layout(bad)


def test_decoding_names_addresses_states_and_the_owner() -> None:
    ev = Decoder(LAYOUT, realtime_offset_ns=0).decode(tcp_rows())[0]
    assert ev["type"] == "tcp" and ev["pid"] == 4242 and ev["comm"] == "curl"
    assert (ev["laddr"], ev["lport"], ev["raddr"], ev["rport"]) == ("10.0.0.1", 40000,
                                                                    "10.0.0.2", 80)  # fmt: skip
    assert ev["active"] is True and ev["failed"] is False and ev["error"] == 0
    assert (ev["tx_bytes"], ev["rx_bytes"], ev["duration_us"]) == (10_002, 3_001, 1234.6)
    assert ev["states"] == ["ESTABLISHED", "SYN_SENT", "FIN_WAIT1", "FIN_WAIT2", "CLOSE"]
    assert detail(ev) == "active 10.0.0.1:40000 > 10.0.0.2:80 tx=10002 rx=3001 1.2 ms"


def test_a_refused_ipv6_connect() -> None:
    one = np.frombuffer(socket.inet_pton(socket.AF_INET6, "::1"), np.uint8)
    arr = tcp_rows(family=6, saddr=one, daddr=one, dport=1, states=0b10000100, error=111,
                   tx_bytes=0, rx_bytes=0)  # fmt: skip
    ev = Decoder(LAYOUT, realtime_offset_ns=0).decode(arr)[0]
    assert ev["failed"] is True and ev["laddr"] == "::1" and ev["states"] == ["SYN_SENT", "CLOSE"]
    assert detail(ev) == "active [::1]:40000 > [::1]:1 failed ECONNREFUSED 1.2 ms"


def test_json_and_fields_carry_the_tcp_fields_in_a_mixed_batch() -> None:
    other = np.zeros(1, dtype=LAYOUT.event)
    other["h"]["type"] = OPEN
    other["data"] = b"/etc/hosts"
    arr = np.concatenate([tcp_rows(), other, tcp_rows(active=0)])
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    objs = [json.loads(line) for line in json_lines(dec, arr)]
    assert [o["type"] for o in objs] == ["tcp", "open", "tcp"]
    assert objs[0] == {**dec.decode(arr[:1])[0], "ts": objs[0]["ts"]}
    assert objs[2]["active"] is False and objs[1]["path"] == "/etc/hosts"
    chosen = batch_text(dec, Records(arr[::2]), ["pid", "raddr", "tx_bytes", "states"])
    assert json.loads(chosen.splitlines()[0]) == {
        "pid": 4242, "raddr": "10.0.0.2", "tx_bytes": 10_002,
        "states": ["ESTABLISHED", "SYN_SENT", "FIN_WAIT1", "FIN_WAIT2", "CLOSE"],
    }  # fmt: skip


def test_tcp_events_and_packets_in_one_records_batch() -> None:
    """The one record form: a batch of tcp events (viewed as their own struct) and
    packets gives each its own fields in JSON, ``--fields`` rows and columns."""
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    net = net_records([net_sample(src="10.9.9.9", dst="10.0.0.2", sport=5, dport=80, proto=6)])
    records = Records(tcp_rows(2, tx_bytes=7), net)
    objs = [json.loads(line) for line in batch_text(dec, records, None).splitlines()]
    assert [(o["type"], o.get("raddr"), o.get("tx_bytes"), o.get("src")) for o in objs] == [
        ("tcp", "10.0.0.2", 7, None), ("tcp", "10.0.0.2", 7, None), ("net", None, None, "10.9.9.9"),
    ]  # fmt: skip
    rows = field_rows(dec, records, ["type", "laddr", "dst"])
    assert [r[:2] for r in rows[:2]] == [("tcp", "10.0.0.1")] * 2
    assert (rows[2][0], rows[2][2]) == ("net", "10.0.0.2")
    out = io.StringIO()
    ColumnOutput(out, dec, width=None).batch(records)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and all("10.0.0.1:40000 > 10.0.0.2:80" in x for x in lines[:2])


def test_a_kmes_payload_decodes_to_the_tcp_fields() -> None:
    """The KMES bridge publishes each ring record whole; kmes-read names its fields."""
    name, fields = TracePayloads().decode(TRACE_EVENT_BASE + TCP, tcp_rows().tobytes()) or ("", {})
    assert name == "tcp" and (fields["laddr"], fields["rport"], fields["tx_bytes"]) == (
        "10.0.0.1", 80, 10_002)  # fmt: skip


def test_the_columns_show_the_detail() -> None:
    ev = Decoder(LAYOUT, realtime_offset_ns=0).decode(tcp_rows(comm=b"\x1b[2Jx"))[0]
    text = format_event(ev, None)
    assert "tcp" in text and "10.0.0.1:40000 > 10.0.0.2:80" in text and "\x1b" not in text


def test_export_rows_keep_the_fields_and_zero_the_pad() -> None:
    arr = tcp_rows(2)
    kept = LAYOUT.data_kept("tcp")
    assert kept is not None and LAYOUT.data_kept("open") is None
    keep, body = compact_rows(arr, kept)
    back = expand_rows(body, 2, keep, LAYOUT.event)
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    assert dec.decode(back) == dec.decode(arr)
    assert not back.view(LAYOUT.views[TCP])["pad"][:, keep - kept :].any()
    cut, _ = compact_rows(arr)  # as a C string, the addresses' zeros would end it
    assert cut < kept


@given(st.integers(0, 0xFFFF))
def test_states_and_failed_agree_with_the_mask(mask: int) -> None:
    names = tcp_data.state_names(mask)
    assert len(names) == bin(mask).count("1")
    assert tcp_data.failed(mask) == ("ESTABLISHED" not in names)
