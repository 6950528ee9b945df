"""``ringtool replay FILE`` in a real terminal (tmux): the trace's dashboard fed from
the recording (made with the project's writer from hand-built records), its header
saying it is a replay; pause freezes the counts, a step shows one batch more, one
second forward one more, the end shows the recording's summary (events, drops,
losses), a seek back reads it again from the start; ``q`` quits with the summary.
And a real trace's recording, played to its end."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from ringtool.trace.units import count
from tests.helpers.recordings import timed_recording
from tests.helpers.tmux import RUN, Terminal, needs_tmux
from tests.helpers.trace import Trace, Worker, hot_file, unique_comm

# host_only: the dashboard's drawing and keys on a terminal, nothing of the kernel's
# version (as the other tmux dashboard tests).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def _total(n: int | str) -> Callable[[str], bool]:
    """The header (the first line) says ``total N``."""
    return lambda screen: re.search(rf"\btotal {re.escape(str(n))}(\s|$)",
                                    screen.splitlines()[0]) is not None  # fmt: skip


@needs_tmux
def test_replay_on_the_dashboard(tmp_path: Path) -> None:
    path, summary = timed_recording(tmp_path)
    term = Terminal(f"{RUN} replay {path}; echo EXITED rc=$?; sleep 60", 120, 40)
    try:
        term.wait_for("REPLAY r.arrows", "per CPU", "top processes", timeout=60)
        term.send("Space", "{")  # paused, to the start: nothing shown yet
        term.wait_for("REPLAY r.arrows 0.0/5.2 s ×1 PAUSED", match=_total(0))
        term.send(".")  # one batch: rpl_0's 10 opens
        term.wait_for("1.0/5.2 s", "rpl_0", absent=("rpl_1",), match=_total(10))
        term.send(".")
        term.wait_for("2.0/5.2 s", "rpl_1", match=_total(30))
        term.send("s")  # a redraw (the syscalls' sort): paused, the counts stay
        term.wait_for("top syscalls (by rate)", "2.0/5.2 s ×1 PAUSED", match=_total(30))
        term.send("f")  # one recorded second: the third batch and its stats line
        term.wait_for("3.0/5.2 s", "rpl_2", "last drops at up 0:00:03 (+4)", match=_total(60))
        term.send("}")  # the end: the recording's summary
        screen = term.wait_for("5.2/5.2 s ×1 END", "rpl_4", match=_total(summary["events"]))
        cpu0 = next(line for line in screen.splitlines() if re.match(r"\s+0\s+\d", line))
        assert cpu0.split()[3] == str(summary["dropped_per_cpu"][0])  # DROPS
        term.send("[")  # 10 s back: from the start again, every process forgotten
        # (one capture may catch the redraw half done: the header new, old rows below)
        term.wait_for("0.0/5.2 s", absent=("rpl_",), match=_total(0))
        term.send("?")
        term.wait_for("replay: one batch of records forward", "replay: to the start / to the end")
        term.send("x")
        term.send("]")
        term.wait_for("5.2/5.2 s ×1 END", match=_total(summary["events"]))
        term.send("q")
        term.wait_for("EXITED rc=0", f"{summary['events']} events in 5.2s, 7 dropped, 2 lost")
    finally:
        term.close()


@needs_tmux
def test_a_real_recording_replays_to_its_summary(tmp_path: Path) -> None:
    """A real trace's recording (a named worker's opens), as fast as it goes: the
    worker's process and the summary's events at the end, exit 0."""
    comm, rec = unique_comm(), tmp_path / "run.arrows"
    worker = Worker(comm, "open", hot_file(tmp_path), 3000)
    trace = Trace("--events", "open", "-c", comm, "--json", "--record", str(rec))
    worker.go()
    worker.wait()
    trace.signal(signal.SIGINT)
    lines, _ = trace.finish()
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary" and summary["events"] >= 3000
    term = Terminal(f"{RUN} replay {rec} --speed max; echo EXITED rc=$?; sleep 60", 120, 40)
    try:
        term.wait_for("REPLAY run.arrows", "×max END", comm, match=_total(count(summary["events"])))
        term.send("q")
        term.wait_for("EXITED rc=0", f"{summary['events']} events in")
    finally:
        term.close()
