"""Recordings (ringtool/event/recording.py, arrow_records.py) on hand-built records:
every batch comes back as written (the same bytes, in order, nothing lost or added),
a file cut anywhere reads back to its last whole batch and then says where it stops,
a damaged one is a RecordingError and never anything else (no damaged value is read
as data: each batch has its checksum), and a recording of another
layout is refused by name."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import RecordingError, RecordingTruncated
from ringtool.event.arrow_records import RecordSchema
from ringtool.event.layout import TRACE_HEADER, parse_layout
from ringtool.event.recording import STATS, RecordingReader, RecordingWriter, layout_meta
from tests.helpers import recordings as older
from tests.helpers.recordings import SCHEMA, batch, recorded, write_recording
from tests.helpers.records import SETTINGS as _SETTINGS

SUMMARY = {"type": "summary", "events": 0}
SETTINGS = settings(_SETTINGS, max_examples=60)


def _read(data: bytes, tmp: str = "/dev/shm") -> tuple[list, RecordingReader]:  # type: ignore[type-arg]
    import tempfile
    from pathlib import Path

    with tempfile.NamedTemporaryFile(dir=tmp, suffix=".arrows") as f:
        f.write(data)
        f.flush()
        reader = RecordingReader(Path(f.name), SCHEMA)
        got = []
        try:
            for records in reader.records():
                got.append(records)
        finally:
            reader.recording.batches = len(got)
        return got, reader


def _data(rec: np.ndarray) -> bytes:  # type: ignore[type-arg]
    """A record array's bytes with its ``pad`` members zeroed (not data: not kept)."""
    rec = rec.copy()
    for name in rec.dtype.names or ():
        if name.startswith("pad"):
            rec[name] = 0
    return rec.tobytes()


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    """``a`` (read back) is ``b`` as recorded (``data`` cut after its strings)."""
    assert a.events.tobytes() == recorded(b).events.tobytes()
    assert _data(a.net.rec) == _data(b.net.rec)
    assert [a.net.payload(i) for i in range(len(a.net))] == [
        b.net.payload(i) for i in range(len(b.net))
    ]


@SETTINGS
@given(st.lists(batch, max_size=5))
def test_every_batch_comes_back_as_written(batches) -> None:  # type: ignore[no-untyped-def]
    data = write_recording(batches, summary=SUMMARY)
    got, reader = _read(data)
    written = [b for b in batches if len(b)]
    assert len(got) == len(written)
    for a, b in zip(got, written, strict=True):
        _same(a, b)
    assert reader.recording.summary == SUMMARY
    assert reader.recording.stats == {"type": "stats", "events": len(batches) - 1} or not batches


@SETTINGS
@given(st.lists(batch.filter(len), min_size=1, max_size=4), st.data())
def test_a_cut_file_reads_to_its_last_whole_batch(batches, data) -> None:  # type: ignore[no-untyped-def]
    whole = write_recording(batches, summary=SUMMARY)
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(RecordingError) as err:
        _read(whole[:cut])
    # what came out is the batches written, in order, each whole
    if isinstance(err.value, RecordingTruncated):
        n = err.value.batches
        assert err.value.offset <= cut
        assert f"at byte {err.value.offset}, after batch {n}" in str(err.value)
        # the batches before the cut are all those whose messages ended before it
        prefix, _ = _read_prefix(whole[:cut])
        assert len(prefix) == n
        for a, b in zip(prefix, batches, strict=False):
            _same(a, b)
    else:  # a cut inside the schema: not a recording at all
        assert "not a ringtool recording" in str(err.value)
        assert cut < len(write_recording([], summary=None, close=False))


def _read_prefix(data: bytes) -> tuple[list, int]:  # type: ignore[type-arg]
    import tempfile
    from pathlib import Path

    with tempfile.NamedTemporaryFile(dir="/dev/shm", suffix=".arrows") as f:
        f.write(data)
        f.flush()
        got = []
        try:
            for records in RecordingReader(Path(f.name), SCHEMA).records():
                got.append(records)
        except RecordingTruncated as exc:
            return got, exc.batches
        raise AssertionError("a cut file read as whole")


@SETTINGS
@given(st.lists(batch.filter(len), min_size=1, max_size=3), st.data())
def test_a_damaged_file_is_a_recording_error(batches, data) -> None:  # type: ignore[no-untyped-def]
    whole = bytearray(write_recording(batches, summary=SUMMARY))
    at = data.draw(st.integers(0, len(whole) - 1))
    whole[at] ^= data.draw(st.integers(1, 255))
    try:
        got, _ = _read(bytes(whole))
    except RecordingError:
        return
    # a byte nothing reads (padding, an unused part of a buffer): the same records
    assert len(got) == len(batches)
    for a, b in zip(got, batches, strict=True):
        _same(a, b)


def test_a_recorder_killed_between_batches_is_truncated() -> None:
    data = write_recording([], summary=None, close=False)
    with pytest.raises(RecordingTruncated, match="no end-of-stream marker at byte"):
        _read(data)


def test_a_closed_recording_without_its_summary_says_so() -> None:
    with pytest.raises(RecordingTruncated, match="no summary"):
        _read(write_recording([], summary=None))


def test_not_a_recording() -> None:
    with pytest.raises(RecordingError, match="not a ringtool recording"):
        _read(b'{"type": "open"}\n')
    with pytest.raises(RecordingError, match="not a ringtool recording"):
        _read(b"")


def _other_layout(text: str) -> bytes:
    schema = RecordSchema(parse_layout(text))
    f = io.BytesIO()
    RecordingWriter(f, schema, {**layout_meta()}, 0)
    return f.getvalue()


def test_a_recording_of_another_layout_is_refused_by_name() -> None:
    # without the tcp and disk types: their structs would have to be resized with
    # trace_event
    header = TRACE_HEADER.read_text().replace("#define TRACE_TCP 8", "")
    header = header.replace("#define TRACE_DISK 10", "")
    extra = header.replace("    u32 mode; ", "    u32 mode;\n    u32 newfield; ", 1)
    assert extra != header
    with pytest.raises(RecordingError, match="column 'newfield' is not in this ringtool's"):
        _read(_other_layout(extra))
    wider = header.replace("    u32 ppid; ", "    u64 ppid; ", 1)
    with pytest.raises(RecordingError, match="column 'ppid' is uint64 in the recording"):
        _read(_other_layout(wider))


def test_types_numbered_differently_are_refused() -> None:
    f = io.BytesIO()
    types = json.loads(layout_meta()["layout_types"])
    types["open"] += 100
    RecordingWriter(f, SCHEMA, {**layout_meta(), "layout_types": json.dumps(types)}, 0)
    with pytest.raises(RecordingError, match="type open numbered differently"):
        _read(f.getvalue())


def test_standard_readers_see_the_records_and_zero_row_accounting() -> None:
    from tests.helpers.recordings import _batch

    b = _batch([], [], [], [])
    data = write_recording([b], summary=SUMMARY)
    reader = ipc.open_stream(pa.BufferReader(data))
    kinds = []
    while True:
        try:
            rb, meta = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        kinds.append((rb.num_rows, dict(meta or {}).get(b"ringtool.kind")))
    assert kinds == [(0, b"start"), (0, STATS.encode()), (0, b"summary")]
    assert np.array_equal(reader.schema.names, SCHEMA.schema.names)


@SETTINGS
@given(st.lists(batch.filter(len), min_size=1, max_size=3), st.data(), st.sampled_from("12"))
def test_an_older_format_reads_and_its_damage_is_found(batches, data, fmt) -> None:  # type: ignore[no-untyped-def]
    whole = {"1": older.write_format1, "2": older.write_format2}[fmt](batches, SUMMARY)
    got, reader = _read(whole)
    assert reader.recording.meta["ringtool.format"] == fmt
    for a, b in zip(got, batches, strict=True):
        _same(a, b)
    damaged = bytearray(whole)
    at = data.draw(st.integers(0, len(whole) - 1))
    damaged[at] ^= data.draw(st.integers(1, 255))
    try:
        got, _ = _read(bytes(damaged))
    except RecordingError:
        return
    for a, b in zip(got, batches, strict=True):
        _same(a, b)


def test_another_format_is_refused_by_name() -> None:
    f = io.BytesIO()
    w = ipc.new_stream(f, SCHEMA.schema.with_metadata({**layout_meta(), "ringtool.format": "4"}))
    w.close()
    with pytest.raises(RecordingError, match=r"recording format '4', this ringtool reads '1', "
                       r"'2' and '3': read it with the ringtool that recorded it"):  # fmt: skip
        _read(f.getvalue())
