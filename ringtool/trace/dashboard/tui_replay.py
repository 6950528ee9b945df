"""The dashboard of a replay (``ringtool replay FILE`` on a terminal): the live one
(:class:`~ringtool.trace.dashboard.tui.TraceTui`), fed by the replay's driver
(:mod:`ringtool.trace.replay_dash`) through the same calls the trace loop makes
(``start``, ``batch``, ``stats``, ``handle_input``), with the replay's keys and its
state in the header.

The seam: the dashboard asks its view (:class:`ReplayView`, a
:class:`~ringtool.trace.dashboard.tui_view.ViewState`) for a ``banner`` (the header's
``REPLAY FILE 0:12/1:00 ×1``) and ``help_keys`` (the help overlay's lines); the live
view has neither. The replay's keys (:data:`PLAYBACK_KEYS`) become actions of a
:class:`Playback` (what the driver implements): pause, one batch or one second
forward, ±10 s, to the start or the end, slower and faster. They are keys only while
no filter is typed and the help is closed (then they are what they are there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.report.stats import TraceStats

#: The replay's keys: key name (tui_keys) -> the :meth:`Playback.control` action.
PLAYBACK_KEYS = {
    " ": "pause", ".": "step", "f": "second", "[": "back", "]": "forward",
    "{": "start", "}": "end", "-": "slower", "+": "faster",
}  # fmt: skip
#: Their lines in the help overlay (``Space`` is the key ``" "``).
PLAYBACK_HELP = (
    ("Space", "replay: pause / resume the recording (counting stops)"),
    (".", "replay: one batch of records forward"),
    ("f", "replay: one second of recorded time forward"),
    ("[ ]", "replay: 10 s back / forward (back reads again from the start)"),
    ("{ }", "replay: to the start / to the end"),
    ("- +", "replay: half / twice the speed"),
)


class Playback(Protocol):
    """What the replay's keys act on: :meth:`control` one of :data:`PLAYBACK_KEYS`'
    actions; :meth:`status` the header's words (file, position, speed, paused)."""

    def control(self, action: str) -> None: ...
    def status(self) -> str: ...


@dataclass
class ReplayView(ViewState):
    """The view of a replay: its keys go to ``playback`` (see the module doc)."""

    playback: Playback | None = None
    help_keys: ClassVar[tuple[tuple[str, str], ...]] = PLAYBACK_HELP

    def key(self, key: str) -> bool:
        action = PLAYBACK_KEYS.get(key)
        if action is None or self.editing is not None or self.help or self.playback is None:
            return super().key(key)
        self.playback.control(action)
        return False

    def banner(self) -> str:
        return "" if self.playback is None else self.playback.status()


class ReplayTui(TraceTui):
    """The dashboard with a :class:`ReplayView` (its ``playback`` set by the driver);
    :meth:`reset` forgets what it kept (a seek back: the player starts again)."""

    def __init__(self, decoder: Decoder, *, console: Console | None = None,
                 input_fd: int | None = None, keep_exited: bool = False,
                 filters: tuple[str, ...] = ()) -> None:  # fmt: skip
        super().__init__(decoder, console=console, input_fd=input_fd, keep_exited=keep_exited,
                         filters=filters)  # fmt: skip
        self.view: ReplayView = ReplayView(keep_exited=keep_exited, exits=self.exits)

    def reset(self, stats: TraceStats) -> None:
        """Forget the recent events, exits and packets kept; show ``stats`` from now."""
        fresh = TraceTui(self.decoder, console=self.console, input_fd=-1)
        self.recent, self.exits, self.tail = fresh.recent, fresh.exits, fresh.tail
        self._net, self._frozen, self._stats = fresh._net, None, stats
        self._forgotten.clear()
        self.view.exits = self.exits
        self.view.gone, self.view.dim = [], set()


__all__ = ["PLAYBACK_HELP", "PLAYBACK_KEYS", "Playback", "ReplayTui", "ReplayView"]
