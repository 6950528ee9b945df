"""The replay's dashboard without a terminal: its keys have help lines (only in a
replay), they act on the playback unless a filter is being typed, and the frames show
the recording at the position the keys chose, with its accounting of then."""

from __future__ import annotations

import io
import math
from pathlib import Path

from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.trace.dashboard.tui_help import KEY_LABELS, help_lines
from ringtool.trace.dashboard.tui_replay import PLAYBACK_KEYS, ReplayTui, ReplayView
from ringtool.trace.dashboard.tui_view import ACTIONS, ALIASES, SCROLL_KEYS, ViewState
from ringtool.trace.replay_dash import Replay
from ringtool.trace.replay_play import Player
from tests.helpers.recordings import LAYOUT, OFFSET_NS, timed_recording
from tests.helpers.tui import frame

LABELS = {**KEY_LABELS, " ": "Space"}


def _keys_in_help(view: ViewState) -> set[str]:
    return {token for key, _ in help_lines(view) for token in key.plain.split()}


def test_the_replay_s_keys_have_help_lines_only_in_a_replay() -> None:
    live = {*ACTIONS, *SCROLL_KEYS, *ALIASES, "q", "Q"}
    assert not live & set(PLAYBACK_KEYS)  # no key of the live dashboard changes meaning
    replay_help, live_help = _keys_in_help(ReplayView()), _keys_in_help(ViewState())
    missing = {k for k in PLAYBACK_KEYS if LABELS.get(k, k) not in replay_help}
    assert not missing, f"replay keys without a help line: {missing}"
    assert not {LABELS.get(k, k) for k in PLAYBACK_KEYS} & live_help
    assert ViewState().banner() == ""


class Actions:
    """A playback that keeps the actions it is given."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def control(self, action: str) -> None:
        self.done.append(action)

    def status(self) -> str:
        return "REPLAY x"


def test_the_keys_act_on_the_playback_unless_typed() -> None:
    pb = Actions()
    view = ReplayView(playback=pb)
    for key in (" ", ".", "f", "[", "]", "{", "}", "-", "+"):
        assert view.key(key) is False
    assert pb.done == ["pause", "step", "second", "back", "forward", "start", "end",
                       "slower", "faster"]  # fmt: skip
    view.key("/")
    for key in ("a", ".", "]", "enter"):
        view.key(key)
    assert view.filter == "a.]" and len(pb.done) == 9  # typed into the filter
    view.key("?")
    view.key(".")  # closes the help, as any other key
    assert not view.help and len(pb.done) == 9
    assert view.banner() == "REPLAY x"


def _dashboard(path: Path) -> tuple[ReplayTui, Replay, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=120, height=40, color_system=None)
    dec = Decoder(LAYOUT, realtime_offset_ns=OFFSET_NS)
    tui = ReplayTui(dec, console=console, input_fd=-1)
    player = Player([path], dec, tui, on_restart=tui.reset)
    ctl = Replay(player, path.name, 1.0)
    tui.view.playback = ctl
    tui.start(["open"], [])
    tui.stats(player.stats)
    return tui, ctl, buf


def _header(tui: ReplayTui, buf: io.StringIO) -> str:
    return frame(tui, buf).splitlines()[0]


def test_the_dashboard_shows_the_position_the_keys_choose(tmp_path: Path) -> None:
    path, summary = timed_recording(tmp_path)
    tui, ctl, buf = _dashboard(path)
    assert "REPLAY r.arrows 0.0/5.2 s ×1 ▶" in _header(tui, buf)
    for key in (" ", ".", "."):  # pause, two batches
        tui.view.key(key)
    screen = frame(tui, buf)
    assert "REPLAY r.arrows 2.0/5.2 s ×1 PAUSED" in screen and "total 30" in screen
    assert "rpl_1" in screen and "rpl_2" not in screen
    ctl.play()  # paused: nothing more
    assert "total 30 " in _header(tui, buf)
    tui.view.key("f")  # one recorded second: the third batch and its stats line (4 drops)
    screen = frame(tui, buf)
    assert (
        "3.0/5.2 s" in screen
        and "total 60 " in screen
        and "last drops at up 0:00:03 (+4)" in screen
    )
    tui.view.key("}")
    screen = frame(tui, buf)
    assert "5.2/5.2 s ×1 END" in screen and f"total {summary['events']} " in screen
    assert "rpl_4" in screen
    tui.view.key("[")  # back to 0: read again from the start, the processes forgotten
    screen = frame(tui, buf)
    assert "0.0/5.2 s" in screen and "total 0" in screen and "rpl_" not in screen
    tui.view.key("]")  # 10 s forward: the end
    assert f"total {summary['events']} " in _header(tui, buf)


def test_as_fast_as_it_can_plays_to_the_end(tmp_path: Path) -> None:
    path, summary = timed_recording(tmp_path)
    tui, ctl, buf = _dashboard(path)
    ctl.speed = math.inf
    while not ctl.at_end:
        ctl.play()
    assert ctl.player.stats.total == summary["events"]
    tui.view.key("-")  # from max, the fastest paced speed
    assert "×1024 END" in _header(tui, buf)
