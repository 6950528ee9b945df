"""``ringtool replay FILE`` on a terminal: the recording on the trace's dashboard.

The dashboard (:class:`~ringtool.trace.dashboard.tui_replay.ReplayTui`) is fed by a
:class:`~ringtool.trace.replay_play.Player` as the trace loop feeds it live: the
batches, and at each recorded ``stats`` message an interval of the statistics (rates,
the kernel's drops and losses, ring fill) and a redraw; at the ``summary`` the run's
final accounting. :class:`Replay` is the playback the replay's keys act on
(:data:`~ringtool.trace.dashboard.tui_replay.PLAYBACK_KEYS`): it plays at ``speed``
times the recorded pace (``inf``: as fast as it can, a batch at a time), pauses,
steps one batch or one recorded second, seeks ±10 s, to the start or to the end (a
seek back reads the recording again from its start: every count is what it was at
that time). At the end of the recording it stays (``END``) until ``q``; then the
summary of what was shown is printed, and a recording cut short says where it stops.
"""

from __future__ import annotations

import math
import select
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.event.syscalls import syscall_namer
from ringtool.trace.dashboard.tui_replay import ReplayTui
from ringtool.trace.outputs import RunConfig
from ringtool.trace.replay_play import Player, scan
from ringtool.trace.signals import StopSignals

#: The sources panel's note: its DROPS column before the summary.
PER_SOURCE = "drops per source: at the end (the stats lines have them per CPU)"
#: A seek's jump (s); the speeds ``-``/``+`` keep to.
JUMP = 10.0
SLOWEST, FASTEST = 1 / 64, 1024.0
#: Playing as fast as it can: batches between looks at the keys (s of work).
FAST_TURN = 0.05


class Replay:
    """The playback of ``player`` (see the module doc): ``speed`` times the recorded
    pace (``math.inf``: as fast as it can); ``name`` the recording's, for the header."""

    def __init__(self, player: Player, name: str, speed: float) -> None:
        self.player = player
        self.name = printable(name)
        self.speed = speed
        self.paused = False
        self._anchor = (player.pos, time.monotonic())

    @property
    def at_end(self) -> bool:
        return self.player.next_at is None

    def control(self, action: str) -> None:
        """One of the replay's key actions (tui_replay's ``PLAYBACK_KEYS``)."""
        p = self.player
        if action == "pause":
            self.paused = not self.paused
        elif action == "step":
            self.paused = True
            p.step()
        elif action == "second":
            self.paused = True
            p.advance(p.pos + 1.0)
        elif action in ("back", "forward"):
            p.seek(p.pos + (JUMP if action == "forward" else -JUMP))
        elif action == "start":
            p.seek(0.0)
        elif action == "end":
            p.advance(math.inf)
        elif action in ("slower", "faster"):
            if math.isinf(self.speed):
                self.speed = FASTEST if action == "slower" else self.speed
            else:
                self.speed *= 2 if action == "faster" else 0.5
                self.speed = min(FASTEST, max(SLOWEST, self.speed))
        self._anchor = (p.pos, time.monotonic())

    def status(self) -> str:
        """``REPLAY run.arrows 12.3/60.0 s ×1 PAUSED`` (or ``▶``, ``END``, ``END (cut
        short)``: a damaged or cut recording, its error said after the dashboard)."""
        p = self.player
        speed = "max" if math.isinf(self.speed) else f"{self.speed:g}"
        end = "END (cut short)" if p.error is not None else "END"
        state = end if self.at_end else "PAUSED" if self.paused else "▶"
        return f"REPLAY {self.name} {p.pos:.1f}/{p.end:.1f} s ×{speed} {state}"

    def play(self) -> None:
        """Play on to where the wall clock says (unless paused)."""
        if self.paused or self.at_end:
            return
        if math.isinf(self.speed):
            until = time.monotonic() + FAST_TURN
            while not self.at_end and time.monotonic() < until:
                self.player.step()
            return
        pos, wall = self._anchor
        self.player.advance(pos + (time.monotonic() - wall) * self.speed)

    def wait(self) -> float:
        """How long to wait for keys before playing on (s)."""
        nxt = self.player.next_at
        if self.paused or nxt is None:
            return 0.25
        if math.isinf(self.speed):
            return 0.0
        pos, wall = self._anchor
        return min(0.25, max(0.0, wall + (nxt - pos) / self.speed - time.monotonic()))


def replay_dashboard(
    paths: Sequence[Path],
    cfg: RunConfig,
    keep: Callable[[Records], Records] | None,
    *,
    speed: float = 1.0,
) -> int:
    """The recording ``paths`` on the dashboard (see the module doc); the exit status
    (0). ``keep``: the filters (None: every record); ``cfg``: ``interval`` (redraws
    when nothing was recorded for that long), ``keep_exited``, ``filters`` (the
    header's)."""
    layout = load_layout()
    timeline = scan(paths)
    decoder = Decoder(layout, syscall_namer(), realtime_offset_ns=timeline.offset_ns)
    tui = ReplayTui(decoder, keep_exited=cfg.keep_exited, filters=cfg.filters)
    player = Player(paths, decoder, tui, keep=keep, on_restart=tui.reset, timeline=timeline)
    if player.next_at is None and player.error is not None:  # nothing to show: say why
        raise player.error
    name = paths[0].name + (f" +{len(paths) - 1}" if len(paths) > 1 else "")
    ctl = Replay(player, name, speed)
    tui.view.playback = ctl
    with StopSignals() as stop, tui:
        sources = list(player.stats.sources)
        tui.start(sources, [PER_SOURCE] if len(sources) > 1 else [])
        _loop(tui, ctl, stop, cfg.interval)
    tui.summary(player.stats)
    if player.error is not None:
        raise player.error
    return 0


def _loop(tui: ReplayTui, ctl: Replay, stop: StopSignals, interval: float) -> None:
    fds = [stop.fileno(), *([tui.input_fd] if tui.input_fd >= 0 else [])]
    ticks, drawn = -1, 0.0
    while not stop.stopped:
        ctl.play()
        now = time.monotonic()
        if ctl.player.ticks != ticks or now - drawn >= interval:
            ticks, drawn = ctl.player.ticks, now
            tui.stats(ctl.player.stats)
        if tui.input_fd < 0 and ctl.at_end:
            return  # no keys to wait for
        ready, _, _ = select.select(fds, [], [], ctl.wait())
        if tui.input_fd in ready and tui.handle_input():
            return


__all__ = ["FAST_TURN", "JUMP", "PER_SOURCE", "Replay", "replay_dashboard"]
