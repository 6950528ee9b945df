"""Batches of ONE event type, the shape a steady load gives (most columns hold one
value, strings repeat with different stale bytes after their NUL): the fast paths for
them (one text per batch, repeated strings found by their prefix, constant columns
converted once, counts without a sort) give exactly what the general code gives.

References: each string field is :func:`cstr` of its raw bytes; each JSON line is
``json.dumps`` of the decoded event made printable; each column line is
:func:`format_event` of the decoded event; the counts are counted one by one here."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.columns import cstr
from ringtool.event.decode import Decoder
from ringtool.event.json_lines import printable_line
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.trace.report.proc_names import latest_names
from ringtool.trace.writers.output_columns import ColumnOutput, format_event
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.records import OFFSETS, SETTINGS, record_array, text_bytes

LAYOUT = load_layout()


@st.composite
def one_type_batch(draw: st.DrawFn) -> np.ndarray[Any, Any]:
    """1..40 records of one type; every other field drawn from one to three values."""
    typ = draw(st.sampled_from([1, 2, 3, 4, 5, 99]))
    n = draw(st.integers(1, 40))

    def few(strategy: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(strategy, min_size=1, max_size=3))

    comms, datas, stales = few(text_bytes), few(text_bytes), few(st.binary(max_size=40))
    nums, values = few(st.integers(0, 2**32 - 1)), few(st.integers(0, 2**64 - 1))
    rets, auxs = few(st.integers(-(2**31), 2**31 - 1)), few(st.integers(0, 2**32 - 1))
    t0 = draw(st.integers(10**12, 10**14))
    step = draw(st.sampled_from([0, 1, 5000, 10**9]))
    pick = st.integers(0, 2)
    recs = [
        (typ, t0 + i * step, nums[draw(pick) % len(nums)], comms[draw(pick) % len(comms)],
         datas[draw(pick) % len(datas)], stales[draw(pick) % len(stales)],
         values[draw(pick) % len(values)], rets[draw(pick) % len(rets)],
         auxs[draw(pick) % len(auxs)])
        for i in range(n)
    ]  # fmt: skip
    return record_array(recs)


def _dumps(ev: dict[str, Any]) -> str:
    return printable_line(json.dumps(ev, ensure_ascii=False, separators=(", ", ": ")))


@SETTINGS
@given(arr=one_type_batch(), offset=st.sampled_from(OFFSETS))
def test_one_type_json_equals_the_decoded_events(arr: np.ndarray[Any, Any], offset: int) -> None:
    decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
    events = decoder.decode(arr)
    assert [ev["comm"] for ev in events] == [cstr(bytes(c)) for c in arr["h"]["comm"]]
    buf = io.StringIO()
    JsonOutput(buf, decoder).batch(Records(arr))
    assert buf.getvalue() == "".join(_dumps(ev) + "\n" for ev in events)


@SETTINGS
@given(arr=one_type_batch(), offset=st.sampled_from(OFFSETS),
       width=st.sampled_from([None, 80, 40]))  # fmt: skip
def test_one_type_columns_equal_the_per_event_lines(
    arr: np.ndarray[Any, Any], offset: int, width: int | None
) -> None:
    decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
    buf = io.StringIO()
    ColumnOutput(buf, decoder, width=width).batch(Records(arr))
    assert buf.getvalue() == "".join(format_event(ev, width) + "\n" for ev in decoder.decode(arr))


@SETTINGS
@given(arr=one_type_batch())
def test_latest_names_of_one_process_batches(arr: np.ndarray[Any, Any]) -> None:
    """Per pid: the count, and the comm and ts of its newest record (the last of
    equal newest ones in array order)."""
    h = arr["h"]
    rows = list(zip(h["pid"].tolist(), h["ts"].tolist(), h["comm"].tolist(), strict=True))
    counts = Counter(pid for pid, _, _ in rows)
    newest: dict[int, tuple[int, bytes]] = {}
    for pid, ts, comm in rows:
        if pid not in newest or ts >= newest[pid][0]:
            newest[pid] = (ts, comm)
    pids = sorted(counts)
    assert latest_names(h) == (
        pids,
        [counts[p] for p in pids],
        [newest[p][1] for p in pids],
        [newest[p][0] for p in pids],
    )
