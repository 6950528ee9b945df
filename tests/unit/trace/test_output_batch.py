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
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.decode import Decoder, Event
from ringtool.event.json_lines import printable_line
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.trace.writers.output_columns import ColumnOutput, format_event
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.records import OFFSETS, SETTINGS, record, record_array

LAYOUT = load_layout()
# --- the per-event reference (the code before the batch formatters) ---------------


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")


def _ref_argv(data: bytes, aux2: int) -> list[str] | None:
    """An exec's argv: after the filename, aux2's count (at most 20) of
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


def check_json_batch(arr: np.ndarray[Any, Any], offset: int) -> Decoder:
    """JSON lines of the batch ``arr`` and its decoded events equal the reference's;
    the decoder used."""
    decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
    buf = io.StringIO()
    JsonOutput(buf, decoder).batch(Records(arr))
    assert buf.getvalue().splitlines() == _ref_json(arr, offset)
    assert decoder.decode(arr) == _ref_events(arr, offset)
    return decoder


# --- the tests ----------------------------------------------------------------------


@SETTINGS
@given(records=st.lists(record, max_size=24), offset=st.sampled_from(OFFSETS))
def test_json_batch_equals_per_event_lines(records: list[tuple[Any, ...]], offset: int) -> None:
    check_json_batch(record_array(records), offset)


@SETTINGS
@given(
    records=st.lists(record, max_size=24),
    offset=st.sampled_from(OFFSETS),
    width=st.sampled_from([None, 80, 200, 40, 60]),
)
def test_column_batch_equals_per_event_lines(
    records: list[tuple[Any, ...]], offset: int, width: int | None
) -> None:
    arr = record_array(records)
    buf = io.StringIO()
    ColumnOutput(buf, Decoder(LAYOUT, realtime_offset_ns=offset), width=width).batch(Records(arr))
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
        arr = record_array(recs)
        decoder = check_json_batch(arr, offset)
        buf = io.StringIO()
        ColumnOutput(buf, decoder, width=80).batch(Records(arr))
        assert buf.getvalue().splitlines() == [
            format_event(ev, 80) for ev in _ref_events(arr, offset)
        ]
