"""``--record`` (trace/writers/output_record.py) and ``ringtool replay``
(trace/replay.py) on hand-built records, no kernel: a rotated recording's parts replay
to the JSON lines the live output wrote for the same batches and to the same summary;
the parts must be one run's, in order; the filters select what they select live; and
the files are created 0600 without following a symlink."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from ringtool.errors import RecordingError, UsageError
from ringtool.event.decode import Decoder
from ringtool.event.json_lines import batch_text, object_line
from ringtool.event.records import Records
from ringtool.event.syscalls import syscall_namer
from ringtool.trace.outputs import RunConfig
from ringtool.trace.reading.flight_count import Overwritten
from ringtool.trace.replay import ReplayFilter, replay
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.stats_json import summary_record
from ringtool.trace.writers.output_record import RecordSink, Rotate
from tests.helpers.net_records import net_sample
from tests.helpers.recordings import LAYOUT, OFFSET_NS


def _batches(n: int, size: int) -> list[Records]:
    rng = np.random.default_rng(7)
    out = []
    types = [LAYOUT.type_id(t) for t in ("open", "exec", "fork", "exit", "syscall")]
    for i in range(n):
        arr = np.zeros(size, LAYOUT.event)
        raw = rng.integers(0, 256, (size, LAYOUT.event.itemsize), dtype=np.uint8)
        arr.view(np.uint8).reshape(size, -1)[:] = raw
        arr["h"]["type"] = rng.choice(types, size)
        arr["h"]["pid"] = rng.integers(1, 5, size)
        arr["h"]["cpu"] = rng.integers(0, 2, size)
        arr["h"]["ts"] = np.arange(size) + i * size
        arr["h"]["comm"] = [b"proc%d" % p for p in arr["h"]["pid"]]
        out.append(Records(arr))
    return out


def _record(tmp: Path, batches: list[Records], rotate: Rotate | None) -> tuple[RecordSink, str]:
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET_NS)
    sink = RecordSink(tmp / "run.arrows", dec, rotate=rotate)
    stats = TraceStats(LAYOUT.type_names, 2, ["open", "exec", "syscalls"])
    live = io.StringIO()
    for b in batches:
        stats.add_batch(b.events)
        sink.publish(b)
        sink.tick(stats)  # each batch written (else kept up to FLUSH_EVENTS)
        live.write(batch_text(dec, b, None))
    stats.tick(drops_cpu=[3, 4], drops_source={"open": [3, 4]}, lost_cpu={})
    stats.end = stats.start + 2.5
    sink.tick(stats)
    sink.close(stats)
    live.write(object_line(summary_record(stats)) + "\n")
    return sink, live.getvalue()


def test_a_rotated_recording_replays_to_the_live_lines(tmp_path: Path) -> None:
    batches = _batches(12, 400)
    sink, live = _record(tmp_path, batches, Rotate(bytes=64 << 10))
    assert len(sink.parts) > 2
    assert [p.name for p in sink.parts[:2]] == ["run.0001.arrows", "run.0002.arrows"]
    for part in sink.parts:
        assert stat.S_IMODE(part.stat().st_mode) == 0o600
    out = io.StringIO()
    assert replay(sink.parts, RunConfig(mode="json"), ReplayFilter(), out) == 0
    assert out.getvalue() == live

    with pytest.raises(RecordingError, match="is not the part after"):
        replay(sink.parts[::-1], RunConfig(mode="json"), ReplayFilter(), io.StringIO())
    with pytest.raises(RecordingError, match="is not the part after"):
        replay([sink.parts[0], sink.parts[2]], RunConfig(mode="json"), ReplayFilter(),
               io.StringIO())  # fmt: skip


def test_filters_select_as_live(tmp_path: Path) -> None:
    batches = _batches(3, 300)
    sink, _ = _record(tmp_path, batches, None)
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET_NS)
    out = io.StringIO()
    replay(sink.parts, RunConfig(mode="json"), ReplayFilter(pid=2, sources=("open",)), out)
    opens = LAYOUT.type_id("open")
    want = "".join(
        batch_text(dec, Records(b.events[(b.events["h"]["pid"] == 2)
                                         & (b.events["h"]["type"] == opens)]), None)
        for b in batches
    )  # fmt: skip
    lines = out.getvalue().splitlines(keepends=True)
    assert "".join(lines[:-1]) == want
    assert '"dropped": 7' in lines[-1]


def test_the_text_summary_has_the_recorded_accounting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sink, _ = _record(tmp_path, _batches(2, 50), None)
    replay(sink.parts, RunConfig(mode="columns", width=None), ReplayFilter(), io.StringIO())
    err = capsys.readouterr().err  # the columns' summary: on stderr, as live
    assert "100 events in 2.5s, 7 dropped, 0 lost" in err
    assert "dropped by source: open 7" in err


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "lower-bound"])
def test_the_text_summary_has_a_flight_recorders_overwritten_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], exact: bool
) -> None:
    # before: the recorded count was in replay's --json summary only, not in its text
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET_NS)
    sink = RecordSink(tmp_path / "fr.arrows", dec)
    stats = TraceStats(LAYOUT.type_names, 2, ["open"])
    stats.add_batch(_batches(1, 50)[0].events)
    sink.publish(_batches(1, 50)[0])
    stats.overwritten = Overwritten(4910, exact, {0: 4900, 1: 10})
    stats.end = stats.start + 2.5
    sink.close(stats)
    replay(sink.parts, RunConfig(mode="columns", width=None), ReplayFilter(), io.StringIO())
    want = "4910 overwritten" if exact else "at least 4910 overwritten"
    assert f"50 events in 2.5s, 0 dropped, 0 lost, {want}" in capsys.readouterr().err
    out = io.StringIO()
    replay(sink.parts, RunConfig(mode="json"), ReplayFilter(), out)
    summary = json.loads(out.getvalue().splitlines()[-1])
    key = "overwritten" if exact else "overwritten_min"
    assert summary[key] == 4910 and summary[f"{key}_per_cpu"] == {"0": 4900, "1": 10}


def test_the_recording_is_private_and_never_through_a_symlink(tmp_path: Path) -> None:
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    secret = tmp_path / "secret"
    secret.write_bytes(b"root only")
    link = tmp_path / "r.arrows"
    link.symlink_to(secret)
    with pytest.raises(UsageError, match=r"--record .*symbolic link"):
        RecordSink(link, dec, force=True)
    assert secret.read_bytes() == b"root only"
    (tmp_path / "x.arrows").write_bytes(b"old")
    with pytest.raises(UsageError, match="exists: add --force"):
        RecordSink(tmp_path / "x.arrows", dec)


def _stops_whole(tmp_path: Path, force: bool, refused: str) -> None:
    """A rotating recording whose second part cannot be made: the run stops with a
    UsageError matching ``refused``, the first part whole with its summary."""
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET_NS)
    sink = RecordSink(tmp_path / "run.arrows", dec, rotate=Rotate(bytes=64 << 10), force=force)
    stats = TraceStats(LAYOUT.type_names, 2, ["open", "exec", "syscalls"])
    with pytest.raises(UsageError, match=refused):
        for b in _batches(12, 400):
            stats.add_batch(b.events)
            sink.publish(b)
            sink.tick(stats)
    stats.end = stats.start + 1.0
    sink.close(stats)
    out = io.StringIO()
    assert replay(sink.parts, RunConfig(mode="json"), ReplayFilter(), out) == 0
    *events, last = out.getvalue().splitlines()
    summary = json.loads(last)
    assert summary["type"] == "summary" and summary["events"] == len(events) > 0
    assert [p.name for p in sink.parts] == ["run.0001.arrows"]


def test_a_next_part_that_exists_stops_the_recording_whole(tmp_path: Path) -> None:
    # before: the part that could not be opened left the closed one as the writer, and
    # the run's close wrote to it: a ValueError traceback, the summary nowhere
    (tmp_path / "run.0002.arrows").write_bytes(b"another user's")
    _stops_whole(tmp_path, False, r"--record .*run\.0002\.arrows: exists: add --force")
    assert (tmp_path / "run.0002.arrows").read_bytes() == b"another user's"


def test_a_next_part_whose_header_cannot_be_written_stops_the_recording_whole(
    tmp_path: Path,
) -> None:
    # the next part a full device (written as it is with --force): its header fails;
    # before, the part before it was closed already and the run's close wrote to it (a
    # ValueError traceback, no summary, a rotate marker naming a part never written)
    os.mknod(tmp_path / "run.0002.arrows", stat.S_IFCHR | 0o600, os.makedev(1, 7))  # /dev/full
    _stops_whole(tmp_path, True, r"--record .*run\.0002\.arrows: No space left")


def _mixed() -> Records:
    """pid 1: open uid 1000 failed; 2: open uid 0 ok; 3: tcp uid 1000 established;
    4: tcp uid 0 never established; 5: exec ok; 6: fork; 7: exec failed."""
    arr = np.zeros(7, LAYOUT.event)
    arr["h"]["pid"] = np.arange(1, 8)
    arr["h"]["type"] = [LAYOUT.type_id(t) for t in
                        ("open", "open", "tcp", "tcp", "exec", "fork", "exec")]  # fmt: skip
    arr["uid"][:2] = [1000, 0]
    arr["ret"][:2] = [-2, 3]
    arr["ret"][6] = -13
    tcp = arr.view(LAYOUT.views[LAYOUT.type_id("tcp")])
    tcp["uid"][2:4] = [1000, 0]
    tcp["states"][2:4] = [1 << 1 | 1 << 2, 1 << 2]  # ESTABLISHED+SYN_SENT; SYN_SENT only
    return Records(arr)


@pytest.mark.parametrize(("flt", "pids"), [
    (ReplayFilter(uid=1000), [1, 3]),
    (ReplayFilter(failed=True), [1, 4, 7]),
    (ReplayFilter(sources=("tcp",)), [3, 4]),
    (ReplayFilter(comm="nope"), []),
])  # fmt: skip
def test_each_filter_reads_the_row_s_own_struct(
    tmp_path: Path, flt: ReplayFilter, pids: list[int]
) -> None:
    sink, _ = _record(tmp_path, [_mixed()], None)
    out = io.StringIO()
    replay(sink.parts, RunConfig(mode="json"), flt, out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [e["pid"] for e in lines[:-1]] == pids


def test_replay_at_a_speed_writes_the_same(tmp_path: Path) -> None:
    batches = _batches(3, 100)  # stamps a few µs apart: paced, yet quick
    sink, live = _record(tmp_path, batches, None)
    out = io.StringIO()
    replay(sink.parts, RunConfig(mode="json"), ReplayFilter(), out, speed=1000.0)
    assert out.getvalue() == live


def test_kept_batches_and_packets_keep_the_live_order(tmp_path: Path) -> None:
    """Reads kept together into one record batch, and reads with packets (written with
    the events kept before them): the lines are the live ones, in the live order."""
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET_NS)
    events = _batches(4, 30)
    packets = dec.net_records([(0, net_sample(b"\x01\x02", pid=9, ts=5)),
                               (0, net_sample(b"", pid=8, ts=6))])  # fmt: skip
    reads = [events[0], Records(events[1].events, packets), events[2], events[3]]
    sink = RecordSink(tmp_path / "r.arrows", dec)
    stats = TraceStats(LAYOUT.type_names, 2, ["open"])
    live = "".join(batch_text(dec, r, None) for r in reads)
    for r in reads:
        stats.add_batch(r.events)
        stats.add_net(r.net)
        sink.publish(r)
    stats.end = stats.start + 1
    sink.close(stats)
    out = io.StringIO()
    replay(sink.parts, RunConfig(mode="json"), ReplayFilter(), out)
    assert out.getvalue() == live + object_line(summary_record(stats)) + "\n"


def test_a_read_of_a_whole_batch_is_its_own_batch_after_what_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads are kept (copied) in one buffer of FLUSH_EVENTS; a read as big is written
    as it comes, after what was kept: no buffer grows, the live order is kept."""
    from ringtool.event.arrow_records import RecordSchema
    from ringtool.event.recording import RecordingReader
    from ringtool.trace.writers import output_record

    monkeypatch.setattr(output_record, "FLUSH_EVENTS", 64)
    dec = Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET_NS)
    reads = [*_batches(1, 30), *_batches(1, 100), *_batches(1, 30)]
    sink = RecordSink(tmp_path / "r.arrows", dec)
    stats = TraceStats(LAYOUT.type_names, 2, ["open"])
    for r in reads:
        stats.add_batch(r.events)
        sink.publish(r)
    stats.end = stats.start + 1
    sink.close(stats)
    sizes = [len(r) for r in RecordingReader(sink.parts[0], RecordSchema(LAYOUT)).records()]
    assert sizes == [30, 100, 30]
    out = io.StringIO()
    replay(sink.parts, RunConfig(mode="json"), ReplayFilter(), out)
    live = "".join(batch_text(dec, r, None) for r in reads)
    assert out.getvalue() == live + object_line(summary_record(stats)) + "\n"
