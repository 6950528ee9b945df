"""Random event records with hostile bytes (quotes, backslashes, controls, ESC, invalid
UTF-8, non-BMP characters, stale bytes after the NUL, strings that fill their field,
empty strings), as hypothesis strategies and a batch of the event layout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ringtool.event.layout import load_layout

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


def record_array(records: list[tuple[Any, ...]]) -> np.ndarray[Any, Any]:
    """The records of :data:`record` as one batch of the event layout."""
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


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def header_records(rows: list[Mapping[str, Any]]) -> np.ndarray:  # type: ignore[type-arg]
    """One zeroed record per row with the row's header fields set (``type`` by name:
    ``{"type": "open", "pid": 10, "comm": b"a"}``)."""
    lay = load_layout()
    arr = np.zeros(len(rows), dtype=lay.event)
    for i, row in enumerate(rows):
        for key, value in row.items():
            arr[i]["h"][key] = lay.type_id(value) if key == "type" else value
    return arr
