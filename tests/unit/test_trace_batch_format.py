"""The column-wise batch formatters (JSON lines, ``--no-tui`` columns) give exactly the
lines of the per-event path they replaced, for random record batches of every type
with hostile bytes: quotes, backslashes, controls, ESC, invalid UTF-8, non-BMP
characters, stale bytes after the NUL, strings that fill their field, empty strings.

The reference below is the per-event code as it was before the batch formatters
(``Decoder.rows``/``fields`` and the f-string line of ``JsonOutput.batch``), kept here
verbatim in meaning so the comparison cannot drift with the code under test."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringtool.trace.events import Decoder, Event
from ringtool.trace.layout import load_layout
from ringtool.trace.output_columns import ColumnOutput, format_event
from ringtool.trace.output_json import JsonOutput, printable_line

LAYOUT = load_layout()
OFFSETS = [0, 1_763_000_000 * 10**9, -5 * 10**9]
PIECES = [
    b"",
    b'"',
    b"\\",
    b"\x1b[2J",
    b"\x7f",
    b"\xc2\x9b",  # C1 CSI, as UTF-8
    b"\xe2\x80\xae",  # bidi override
    b"\xf0\x9f\x98\x80",  # non-BMP
    b"\xff\xfe",
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b"\xc3",  # truncated sequence
    b"/usr/bin/cat",
    b"a,b\r\nc",
    b"\t",
]
text_bytes = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=6).map(b"".join),
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
)


def _field(raw: bytes, stale: bytes, size: int) -> bytes:
    """``raw`` NUL-terminated with stale bytes after it, in ``size`` bytes (a raw
    longer than the field fills it: no NUL at all)."""
    return (raw + b"\0" + stale)[:size].ljust(size, b"\0")


record = st.tuples(
    st.sampled_from([1, 2, 3, 4, 5, 5, 4, 99, 0]),  # type codes, some unknown
    st.one_of(st.integers(0, 2**64 - 1), st.integers(10**12, 10**14), st.sampled_from([0, 1])),
    st.integers(0, 2**32 - 1),  # cpu / pid / tid
    text_bytes,  # comm
    text_bytes,  # data
    st.binary(max_size=300),  # stale bytes
    st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 10**9)),  # value
    st.integers(-(2**31), 2**31 - 1),  # ret
    st.one_of(st.sampled_from([0, 1]), st.integers(0, 2**32 - 1)),  # aux
)


def _array(records: list[tuple[Any, ...]]) -> np.ndarray[Any, Any]:
    arr = np.zeros(len(records), dtype=LAYOUT.event)
    for i, (typ, ts, num, comm, data, stale, value, ret, aux) in enumerate(records):
        h = arr[i]["h"]
        h["type"], h["ts"], h["cpu"], h["pid"], h["tid"] = typ, ts, num % 4, num, num ^ 1
        h["comm"] = _field(comm, stale, 16)
        arr[i]["data"] = _field(data, stale, 256)
        arr[i]["value"], arr[i]["ret"], arr[i]["aux"], arr[i]["ppid"] = value, ret, aux, num >> 3
        h["cgroup"], arr[i]["aux2"] = value >> 1, aux
        arr[i]["uid"], arr[i]["gid"] = num, num >> 1
        arr[i]["call"], arr[i]["mode"] = aux % 9, ret & 0o7777  # call 0, 8: unknown
    return arr


# --- the per-event reference (the code before the batch formatters) ---------------


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")


def _ref_argv(data: bytes, aux2: int) -> list[str] | None:
    """An exec's argv (issue 14): after the filename, aux2's count (at most 20) of
    NUL-terminated strings (missing ones at the end: empty); None with bit 30."""
    if aux2 & 0x40000000:
        return None
    n = min(aux2 & 0xFFFF, 20)
    parts = data.split(b"\0")[1 : 1 + n]
    return [_cstr(p) for p in parts + [b""] * (n - len(parts))]


CALLS = {1: "open", 2: "openat", 3: "openat2", 4: "creat", 5: "open_by_handle_at",
         6: "execve", 7: "execveat"}  # fmt: skip


def _ref_fields(name: str, value: int, ppid: int, ret: int, aux: int, data: bytes,
                aux2: int = 0) -> list[tuple[str, Any]]:  # fmt: skip
    call = CALLS.get(aux % 9)
    if name == "open":
        return [("path", _cstr(data)), ("flags", value), ("mode", ret & 0o7777), ("ret", ret),
                ("syscall", call)]  # fmt: skip
    if name == "exec":
        return [("filename", _cstr(data)), ("argv", _ref_argv(data, aux2)),
                ("argv_truncated", bool(aux2 & 0x80000000)), ("ppid", ppid), ("ret", ret),
                ("syscall", call)]  # fmt: skip
    if name == "exit":
        return [("exit_code", (value >> 8) & 0xFF if aux else None), ("ppid", ppid)]
    if name == "fork":
        return [("child_pid", aux), ("child_comm", _cstr(data)), ("ppid", ppid)]
    if name == "syscall":
        return [("syscall", f"sys_{aux}"), ("nr", aux),
                ("latency_us", round(value / 1000, 1)), ("ret", ret)]  # fmt: skip
    return []


def _ref_rows(arr: np.ndarray[Any, Any], offset: int) -> list[tuple[Any, ...]]:
    h = arr["h"]
    ts = ((h["ts"].astype(np.int64) + offset) / 1e9).tolist()
    cols = zip(
        h["type"].tolist(), ts, h["cpu"].tolist(), h["pid"].tolist(), h["tid"].tolist(),
        h["comm"].tolist(), arr["value"].tolist(), arr["ppid"].tolist(),
        arr["ret"].tolist(), arr["aux"].tolist(), arr["data"].tolist(), arr["aux2"].tolist(),
        h["cgroup"].tolist(), strict=True,
    )  # fmt: skip
    out = []
    for typ, t, cpu, pid, tid, comm, value, ppid, ret, aux, data, aux2, cgroup in cols:
        name = LAYOUT.type_names.get(typ, str(typ))
        fields = [("cgroup", cgroup), ("uid", pid), ("gid", pid >> 1),
                  *_ref_fields(name, value, ppid, ret, aux, data, aux2)]  # fmt: skip
        out.append((name, t, cpu, pid, tid, _cstr(comm), fields))
    return out


def _ref_value(v: Any) -> str:
    if isinstance(v, str | bool | list):
        return json.dumps(v, ensure_ascii=False)
    if v is None:
        return "null"
    return repr(v) if isinstance(v, float) else str(v)


def _ref_json(arr: np.ndarray[Any, Any], offset: int) -> list[str]:
    lines = [
        f'{{"type": "{name}", "ts": {t!r}, "cpu": {cpu}, "pid": {pid}, "tid": {tid}, '
        f'"comm": {_ref_value(comm)}'
        f"{''.join(f', {_ref_value(k)}: {_ref_value(v)}' for k, v in fields)}}}"
        for name, t, cpu, pid, tid, comm, fields in _ref_rows(arr, offset)
    ]
    return [printable_line(line) for line in lines]


def _ref_events(arr: np.ndarray[Any, Any], offset: int) -> list[Event]:
    out = []
    for name, t, cpu, pid, tid, comm, fields in _ref_rows(arr, offset):
        ev: Event = {"type": name, "ts": t, "cpu": cpu, "pid": pid, "tid": tid, "comm": comm}
        ev.update(fields)
        out.append(ev)
    return out


# --- the tests ----------------------------------------------------------------------

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(records=st.lists(record, max_size=24), offset=st.sampled_from(OFFSETS))
def test_json_batch_equals_per_event_lines(records: list[tuple[Any, ...]], offset: int) -> None:
    arr = _array(records)
    decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
    buf = io.StringIO()
    JsonOutput(buf, decoder).batch(arr, [])
    assert buf.getvalue().splitlines() == _ref_json(arr, offset)
    assert decoder.decode(arr) == _ref_events(arr, offset)


@SETTINGS
@given(
    records=st.lists(record, max_size=24),
    offset=st.sampled_from(OFFSETS),
    width=st.sampled_from([None, 80, 200, 40, 60]),
)
def test_column_batch_equals_per_event_lines(
    records: list[tuple[Any, ...]], offset: int, width: int | None
) -> None:
    arr = _array(records)
    buf = io.StringIO()
    ColumnOutput(buf, Decoder(LAYOUT, realtime_offset_ns=offset), width=width).batch(arr, [])
    expected = [format_event(ev, width) for ev in _ref_events(arr, offset)]
    assert buf.getvalue().splitlines() == expected


def test_a_large_plain_batch_takes_the_fast_path_and_stays_exact() -> None:
    """4096 records of one type with printable ASCII and stale bytes (the common case
    at high rates), with distinct paths and with one path repeated (stale bytes that
    differ after its NUL): the same lines as the reference."""
    n = 4096
    offset = time.time_ns() - time.monotonic_ns()
    for repeated in (False, True):
        recs = [(4, 10**13 + i, i, b"rt_bench_loop", b"/dev/null" if repeated else b"/t/f%d" % i,
                 b"stale%d\xff" % i * 9, 0, 3, 0) for i in range(n)]  # fmt: skip
        arr = _array(recs)
        decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
        buf = io.StringIO()
        JsonOutput(buf, decoder).batch(arr, [])
        assert buf.getvalue().splitlines() == _ref_json(arr, offset)
        assert decoder.decode(arr) == _ref_events(arr, offset)
        buf = io.StringIO()
        ColumnOutput(buf, decoder, width=80).batch(arr, [])
        assert buf.getvalue().splitlines() == [
            format_event(ev, 80) for ev in _ref_events(arr, offset)
        ]
