"""The replay's time line and player on hand-built recordings (the project's writer):
where each message is in recorded time, what the statistics are at a point (the
per-process counts and the recorded drops and losses as they were then), stepping,
and a seek back that reads again from the start; the stream outputs' stats lines
from the recorded ones."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.trace.outputs import RunConfig
from ringtool.trace.replay import ReplayFilter, replay
from ringtool.trace.replay_dash import Replay
from ringtool.trace.replay_play import Player, scan
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.sink import OutputBase
from tests.helpers.recordings import LAYOUT, OFFSET_NS, opens, save, timed_recording, write_messages

START = 5_000 * 10**9


class Kept(OutputBase):
    """An output that keeps the pids of the batches it is given."""

    def __init__(self) -> None:
        self.pids: list[int] = []

    def start(self, sources: list[str], notes: list[str]) -> None:
        pass

    def batch(self, records: Records) -> None:
        self.pids += records.events["h"]["pid"].tolist()

    def stats(self, stats: TraceStats) -> None:
        pass

    def summary(self, stats: TraceStats) -> None:
        pass

    def note(self, text: str) -> None:
        pass


def _player(path: Path) -> tuple[Player, Kept, list[TraceStats]]:
    out, restarts = Kept(), []
    dec = Decoder(LAYOUT, realtime_offset_ns=OFFSET_NS)

    def restarted(stats: TraceStats) -> None:
        restarts.append(stats)
        out.pids.clear()

    return Player([path], dec, out, on_restart=restarted), out, restarts


def _procs(stats: TraceStats) -> dict[int, int]:
    return {pid: row[1] for pid, row in stats.procs.items()}


def test_the_time_line_starts_at_the_run_s_start(tmp_path: Path) -> None:
    path, _ = timed_recording(tmp_path, START)
    tl = scan([path])
    assert tl.origin_ns == START  # batch 0's newest is at 1 s, its tick's uptime_s
    assert tl.end == 5.2  # the summary's duration_s
    assert (tl.batches, tl.ncpu, tl.sources, tl.offset_ns) == (5, 2, ["open"], OFFSET_NS)


def test_the_start_is_at_most_the_first_record(tmp_path: Path) -> None:
    # no stats line (a run shorter than an interval): the first record is time 0
    path = save(tmp_path, write_messages([opens(1, "a", [START + 7]), opens(1, "a", [START + 9])]))
    tl = scan([path])
    assert (tl.origin_ns, tl.end) == (START + 7, 2e-9)


def test_a_point_in_time_has_the_counts_and_accounting_of_then(tmp_path: Path) -> None:
    path, _ = timed_recording(tmp_path, START)
    p, out, _ = _player(path)
    p.advance(2.5)
    st = p.stats
    assert p.pos == 2.5 and st.uptime == 2.5
    assert _procs(st) == {100: 10, 101: 20} and st.total == 30
    assert p.ticks == 2 and st.dropped == 0 and st.lost == 0
    p.advance(3.0)  # the third second: 30 more events, its stats line: 4 drops on CPU 0
    assert st.total == 60 and st.drops_cpu == [4, 0] and st.dropped_interval == 4
    assert st.drops_source == {"open": 4}  # one source: the drops are its
    assert st.interval_end == 3.0 and st.rate_total == 30.0  # the interval's rate, as live
    assert [(m.uptime_s, m.dropped) for m in st.drop_log] == [(3.0, 4)]
    assert st.fill_cpu == {0: 0.01, 1: 0.02}
    assert out.pids == [100] * 10 + [101] * 20 + [102] * 30


def test_step_is_one_batch(tmp_path: Path) -> None:
    path, _ = timed_recording(tmp_path, START)
    p, _, _ = _player(path)
    p.step()
    assert (p.stats.total, p.pos, p.ticks) == (10, 1.0, 0)  # its stats line comes after it
    p.step()
    assert (p.stats.total, p.pos, p.ticks) == (30, 2.0, 1)


def test_a_seek_back_reads_again_from_the_start(tmp_path: Path) -> None:
    path, _ = timed_recording(tmp_path, START)
    p, out, restarts = _player(path)
    p.advance(4.5)
    p.seek(2.0)
    assert len(restarts) == 1 and restarts[0] is p.stats  # new statistics, the output told
    fresh, _, _ = _player(path)
    fresh.advance(2.0)
    assert _procs(p.stats) == _procs(fresh.stats) == {100: 10, 101: 20}
    assert p.stats.drops_cpu == fresh.stats.drops_cpu == [0, 0]
    assert p.pos == fresh.pos == 2.0
    assert out.pids == [100] * 10 + [101] * 20
    p.seek(3.0)  # forward: no restart
    assert len(restarts) == 1 and p.stats.total == 60


def test_the_end_is_the_recording_s_summary(tmp_path: Path) -> None:
    path, summary = timed_recording(tmp_path, START)
    p, _, _ = _player(path)
    p.seek(math.inf)
    st = p.stats
    assert st.total == summary["events"] and st.by_type == summary["by_type"]
    assert (st.dropped, st.lost) == (summary["dropped"], summary["lost"])
    assert st.drops_cpu == summary["dropped_per_cpu"] and st.lost_cpu == {1: 2}
    assert st.uptime == summary["duration_s"] and p.pos == p.end == 5.2
    assert p.next_at is None and p.error is None


def test_a_cut_recording_plays_to_its_cut(tmp_path: Path) -> None:
    path, _ = timed_recording(tmp_path, START)
    data = path.read_bytes()
    cut = save(tmp_path, data[: len(data) // 2], "cut.arrows")
    p, _, _ = _player(cut)
    p.advance(math.inf)
    assert p.error is not None and "cut.arrows" in str(p.error)
    assert 0 < p.stats.total < 150
    assert Replay(p, "cut.arrows", 1.0).status().endswith("END (cut short)")


@pytest.mark.parametrize("every", [False, True])
def test_stream_stats_lines_are_the_recorded_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], every: bool
) -> None:
    path, _ = timed_recording(tmp_path, START)
    cfg = RunConfig(mode="json", stats_lines=every)
    assert replay([path], cfg, ReplayFilter(), io.StringIO()) == 0
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    uptimes = [o["uptime_s"] for o in lines if o["type"] == "stats"]
    dropped = [o["dropped"] for o in lines if o["type"] == "stats"]
    if every:
        assert uptimes == [1.0, 2.0, 3.0, 4.0, 5.0] and dropped == [0, 0, 4, 7, 7]
    else:  # as live: only the intervals with drops or losses
        assert uptimes == [3.0, 4.0, 5.0] and dropped == [4, 7, 7]


_OPS = st.lists(st.one_of(st.just(-1.0), st.floats(0, 6.5)), min_size=1, max_size=8)


@given(ops=_OPS)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_position_s_counts_do_not_depend_on_the_way_there(
    tmp_path: Path, ops: list[float]
) -> None:
    """Any sequence of seeks (back and forward) and steps (-1) ends with the counts a
    player that went straight there has; after a seek, its accounting too."""
    path = tmp_path / "r.arrows"
    if not path.exists():
        timed_recording(tmp_path, START)
    p, out, _ = _player(path)
    for op in ops:
        if op < 0:
            p.step()
        else:
            p.seek(op)
    straight, _, _ = _player(path)
    straight.advance(p.pos)
    assert _procs(p.stats) == _procs(straight.stats) and p.stats.total == straight.stats.total
    assert out.pids == sorted(out.pids) and len(out.pids) == p.stats.total  # each batch once
    if ops[-1] >= 0:
        assert (p.stats.drops_cpu, p.stats.lost_cpu) == (straight.stats.drops_cpu,
                                                         straight.stats.lost_cpu)  # fmt: skip
