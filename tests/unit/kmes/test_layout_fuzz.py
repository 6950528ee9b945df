"""Hypothesis fuzz of every KMES format parser (docs/kmes.md §3.1, §4.3): random bytes, random
offsets, random values give a result or a ``ringtool.errors`` exception, nothing else.
On the code before the fix ``unpack_event`` raised ``struct.error`` on short buffers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import KmesFormatError, RingtoolError
from ringtool.kmes import layout as L


@settings(max_examples=2000, deadline=None)
@given(buf=st.binary(max_size=200), offset=st.integers(-50, 250))
def test_unpack_event_raises_only_kmes_format_error(buf: bytes, offset: int) -> None:
    try:
        size, ev = L.unpack_event(buf, offset)
    except KmesFormatError:
        return
    # Accepted: everything it claims lies inside buf and satisfies docs/kmes.md §4.3.
    assert offset >= 0 and offset + size <= len(buf)
    assert size % 8 == 0 and size >= L.HEADER_SIZE + len(ev.payload)
    assert 1 <= ev.origin_class <= 3 and ev.event_type != 0


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 40))
def test_unpack_event_short_buffer(n: int) -> None:
    buf = bytearray(64)
    L.pack_event(buf, 0, event_type=1, origin_class=1, timestamp=1, seq=1, cpu_id=0, payload=b"")
    try:
        L.unpack_event(bytes(buf[:n]))
    except KmesFormatError:
        assert n < 32
    else:
        assert n >= 32


@settings(max_examples=500, deadline=None)
@given(page=st.binary(min_size=0, max_size=4200), magic=st.booleans())
def test_read_static_raises_only_kmes_format_error(page: bytes, magic: bool) -> None:
    if magic and len(page) >= 12:  # get past the magic/version checks more often
        page = L.MAGIC + (1).to_bytes(4, "little") + page[12:]
    try:
        st_ = L.read_static(page)
    except KmesFormatError:
        return
    assert L.check_capacity(st_.capacity) == st_.capacity


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.integers(), st.floats(), st.none(), st.text(max_size=3)))
def test_check_capacity_raises_only_ringtool_errors(value: object) -> None:
    try:
        L.check_capacity(value)  # type: ignore[arg-type]
    except RingtoolError:
        pass


@settings(max_examples=300, deadline=None)
@given(
    offset=st.integers(-8, 80),
    plen=st.integers(0, 64),
    seq=st.integers(-1, 1 << 65),
    cpu=st.integers(-1, 1 << 17),
)
def test_pack_event_raises_only_kmes_format_error(
    offset: int, plen: int, seq: int, cpu: int
) -> None:
    buf = bytearray(96)
    try:
        size = L.pack_event(
            buf, offset, event_type=1, origin_class=3, timestamp=0, seq=seq, cpu_id=cpu,
            payload=b"x" * plen,
        )  # fmt: skip
    except KmesFormatError:
        return
    assert L.unpack_event(buf, offset)[0] == size


@pytest.mark.parametrize("bad", [None, 5, "abc", [1, 2], "x" * 64, list(range(4096))])
def test_wrong_types_are_kmes_format_errors(bad: object) -> None:
    with pytest.raises(KmesFormatError):
        L.unpack_event(bad)  # type: ignore[arg-type]
    with pytest.raises(KmesFormatError):
        L.read_static(bad)  # type: ignore[arg-type]
