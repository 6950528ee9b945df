"""The single event definition: bpf/trace_event.h parsed into numpy dtypes, decoded."""

from __future__ import annotations

import numpy as np
import pytest

from ringtool.event.decode import Decoder
from ringtool.event.detail import detail
from ringtool.event.layout import LayoutError, load_layout, parse_layout
from ringtool.event.records import Records
from tests.helpers.net_records import net_sample


def test_header_layout_offsets_and_sizes() -> None:
    lay = load_layout()
    hdr = lay.dtypes["trace_hdr"]
    assert hdr.itemsize == 48
    assert {k: v[1] for k, v in hdr.fields.items()} == {
        "ts": 0, "type": 8, "cpu": 12, "pid": 16, "tid": 20, "comm": 24, "cgroup": 40,
    }  # fmt: skip
    ev = lay.event
    assert ev.itemsize == 352
    assert [(k, v[1]) for k, v in ev.fields.items()] == [
        ("h", 0), ("value", 48), ("ppid", 56), ("ret", 60), ("aux", 64), ("aux2", 68),
        ("uid", 72), ("gid", 76), ("call", 80), ("mode", 84), ("data_len", 88), ("pad", 92),
        ("data", 96),
    ]  # fmt: skip
    assert ev["data"] == np.dtype("S256")
    assert lay.net.itemsize == 104
    assert lay.net.fields["sport"][1] == 80
    assert lay.type_names == {
        1: "exec", 2: "exit", 3: "fork", 4: "open", 5: "syscall", 6: "net", 7: "mark", 8: "tcp",
        10: "disk",
        11: "cpuwait",
    }  # fmt: skip
    assert lay.size_defines() == {"TRACE_EVENT_SIZE": 352, "TRACE_NET_SIZE": 104}
    assert lay.call_names == {1: "open", 2: "openat", 3: "openat2", 4: "creat",
                              5: "open_by_handle_at", 6: "execve", 7: "execveat"}  # fmt: skip


HEADER = """
#define TRACE_N 3
/* comment with struct trace_fake { u64 x; }; inside */
struct trace_hdr { u8 a; u64 b; };
struct trace_event { struct trace_hdr h; u16 c[TRACE_N]; s32 d; char e[5]; };
struct trace_net { u32 x; };
"""


def test_parse_aligns_like_c() -> None:
    lay = parse_layout(HEADER)
    assert lay.dtypes["trace_hdr"].itemsize == 16  # u8 then u64 at 8
    ev = lay.event
    assert ev.fields["c"][1] == 16 and ev["c"].shape == (3,)
    assert ev.fields["d"][1] == 24  # u16[3] ends at 22, s32 aligned to 24
    assert ev.fields["e"][1] == 28
    assert ev.itemsize == 40  # 33 rounded to the u64 alignment
    assert "trace_fake" not in lay.dtypes


@pytest.mark.parametrize(
    "bad",
    [
        "struct trace_hdr { float x; }; struct trace_event { u8 a; }; struct trace_net { u8 b; };",
        "struct trace_hdr { u8 x[NOPE]; };",
        "struct trace_event { struct trace_later l; };",
        "struct trace_hdr { u8 x; };",
    ],
)
def test_parse_refuses_what_it_does_not_understand(bad: str) -> None:
    with pytest.raises(LayoutError):
        parse_layout(bad)


def _record(lay, typ: str, **fields: object) -> np.ndarray:  # type: ignore[no-untyped-def]
    arr = np.zeros(1, dtype=lay.event)
    arr["h"]["type"] = lay.type_id(typ)
    arr["h"]["ts"] = 5_000_000_000
    arr["h"]["cpu"] = 1
    arr["h"]["pid"] = 42
    arr["h"]["tid"] = 43
    arr["h"]["comm"] = b"cat"
    for k, v in fields.items():
        arr[k] = v
    return arr


def test_decode_each_type() -> None:
    lay = load_layout()
    dec = Decoder(lay, lambda nr: {257: "openat"}.get(nr, "?"), realtime_offset_ns=10**9)
    batch = np.concatenate([
        _record(lay, "exec", data=b"/bin/cat\0cat\0-n\0", aux2=2, ppid=7, value=5 << 32 | 9,
                uid=9, gid=5, call=6),
        _record(lay, "open", data=b"/tmp/x", value=0o101, ret=-2, mode=0o640, call=4, uid=3,
                gid=4),
        _record(lay, "exit", value=3 << 8, aux=1, ppid=7),
        _record(lay, "exit", aux=0),
        _record(lay, "fork", aux=99, data=b"bash", ppid=1),
        _record(lay, "syscall", aux=257, value=150_000_000, ret=3),
    ])  # fmt: skip
    evs = dec.decode(batch)
    common = {"ts": 6.0, "cpu": 1, "pid": 42, "tid": 43, "comm": "cat", "cgroup": 0}
    assert evs[0] == {"type": "exec", **common, "uid": 9, "gid": 5, "filename": "/bin/cat",
                      "argv": ["cat", "-n"], "argv_truncated": False, "ppid": 7, "ret": 0,
                      "syscall": "execve"}  # fmt: skip
    assert detail(evs[0]) == "/bin/cat -n ppid=7 uid=9"
    assert evs[1] == {"type": "open", **common, "uid": 3, "gid": 4, "path": "/tmp/x",
                      "flags": 0o101, "mode": 0o640, "ret": -2, "syscall": "creat"}  # fmt: skip
    assert evs[2]["uid"] == 0 and evs[4]["gid"] == 0 and evs[5]["uid"] == 0
    assert evs[2]["exit_code"] == 3 and evs[2]["ppid"] == 7
    assert evs[3]["exit_code"] is None
    assert evs[4]["child_pid"] == 99 and evs[4]["child_comm"] == "bash"
    assert evs[5]["syscall"] == "openat" and evs[5]["latency_us"] == 150000.0
    assert detail(evs[1]) == "/tmp/x O_WRONLY|O_CREAT 0640 = -2 ENOENT (creat)"
    assert detail(evs[3]).startswith("code=?")
    assert dec.decode(np.empty(0, dtype=lay.event)) == []


def test_decode_net_sample() -> None:
    lay = load_layout()
    rec = np.zeros(1, dtype=lay.net)
    rec["h"]["type"] = lay.type_id("net")
    rec["h"]["ts"] = 1_000
    rec["saddr"][0, :4] = [10, 0, 0, 1]
    rec["daddr"][0, :4] = [10, 0, 0, 2]
    rec["sport"], rec["dport"], rec["proto"], rec["family"] = 1234, 80, 6, 4
    rec["len"], rec["captured"], rec["dir"] = 100, 4, 1
    raw = rec.tobytes() + b"ABCD" + b"\0" * 4
    dec = Decoder(lay, realtime_offset_ns=0)
    net = dec.net_records([(0, raw)])
    (ev,) = dec.decode(net.rec)
    assert ev["src"] == "10.0.0.1" and ev["dst"] == "10.0.0.2"
    assert (ev["sport"], ev["dport"], ev["proto"], ev["len"]) == (1234, 80, "tcp", 100)
    assert net.payload(0) == b"ABCD" and ev["dir"] == "egress"


def test_json_lines_equal_the_decoded_events() -> None:
    import io
    import json

    from ringtool.trace.writers.output_json import JsonOutput

    lay = load_layout()
    dec = Decoder(lay, lambda nr: 'open\\at"', realtime_offset_ns=123_456_789)
    batch = np.concatenate([
        _record(lay, "exec", data=b"/bin/c\xc3\xa4t\n", ppid=7),
        _record(lay, "open", data=b"/tmp/\"x\"\0stale", value=0o100, ret=-2),
        _record(lay, "exit", value=3 << 8, aux=1),
        _record(lay, "exit"),
        _record(lay, "fork", aux=99, data=b"bash"),
        _record(lay, "syscall", aux=257, value=150_123_456, ret=3),
    ])  # fmt: skip
    out = io.StringIO()
    net = dec.net_records([(0, net_sample(b"x", len=1))])
    JsonOutput(out, dec).batch(Records(batch, net))
    lines = out.getvalue().split("\n")
    assert lines[-1] == ""
    assert [json.loads(line) for line in lines[:-2]] == dec.decode(batch)
    assert json.loads(lines[-2]) == dec.decode(net.rec)[0] and dec.decode(net.rec)[0]["len"] == 1
    assert json.loads(lines[1])["path"] == '/tmp/"x"'
