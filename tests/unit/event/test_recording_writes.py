"""How a recording's writer hands its messages to the file: each call's messages are
on disk when it returns (gathered natively, one write a message), a file that fails
raises the file's OSError and nothing else."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from ringtool.event.recording import STATS, SUMMARY, RecordingReader, RecordingWriter
from tests.helpers.recordings import SCHEMA, opens


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
