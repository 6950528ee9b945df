"""How a recording's writer hands its messages to the file: each call's messages are
on disk when it returns (gathered natively, one write a message), a file that fails
raises the file's OSError and nothing else; the checksum that skips the writer's
columns of nulls (its zero buffer) is the one a reader computes."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.recording import STATS, SUMMARY, RecordingReader, RecordingWriter
from ringtool.event.recording_check import ColumnsSum
from ringtool.event.records import Records
from tests.helpers.recordings import SCHEMA, batch, opens
from tests.helpers.records import SETTINGS


@SETTINGS
@given(st.lists(batch.filter(len), min_size=1, max_size=3))
def test_the_writers_checksum_is_the_readers(batches: list[Records]) -> None:
    for b in batches:
        cols = SCHEMA.to_arrow(b, 0)
        assert ColumnsSum()(cols, SCHEMA.zeros) == ColumnsSum()(cols)


def test_each_call_is_on_disk_when_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "r.arrows"
    records = [opens(7, "cat", list(range(100, 400))), opens(8, "sh", [500, 501])]
    f = path.open("wb")
    w = RecordingWriter(f, SCHEMA, {}, 0)
    sizes = [os.stat(path).st_size]
    for b in records:
        w.write(b)
        sizes.append(os.stat(path).st_size)
        w.account(STATS, {"type": "stats"})
        sizes.append(os.stat(path).st_size)
        assert sizes[-1] == w.size > sizes[-2] > sizes[-3]
    w.account(SUMMARY, {"type": "summary"})
    w.close()
    got = list(RecordingReader(path, SCHEMA).records())
    assert [len(g) for g in got] == [len(b) for b in records]


def test_a_file_that_fails_raises_its_error_alone(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OSError), open("/dev/full", "wb") as full:
        RecordingWriter(full, SCHEMA, {}, 0)
    gc.collect()  # the writer's native buffer is gone: nothing said about it
    assert capfd.readouterr().err == ""
