"""htop habits of the ``ringtool trace`` dashboard in a real terminal (tmux): the help
overlay, the sort marker, the filter in the header."""

from __future__ import annotations

import shutil
import uuid

import pytest

from tests.kernel.test_trace_tui import RUN, _tmux, _wait_for

pytestmark = pytest.mark.kernel


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40), (200, 60)])
def test_keys_in_tmux(w: int, h: int) -> None:
    session = f"rt-{uuid.uuid4().hex[:8]}"
    cmd = f"{RUN} trace --interval 0.3; echo EXITED rc=$?; sleep 60"
    _tmux("new-session", "-d", "-s", session, "-x", str(w), "-y", str(h), cmd)
    try:
        _wait_for(session, "per CPU", "EVENTS▼", "? help", absent=("EV/IV▼",))
        _tmux("send-keys", "-t", session, "?")
        _wait_for(session, "keys (any key closes this help)", "invert the sort order",
                  "drill down into the selected process", absent=("per CPU",))  # fmt: skip
        _tmux("send-keys", "-t", session, "Escape")
        _wait_for(session, "per CPU", "EVENTS▼")
        _tmux("send-keys", "-t", session, "F1")  # the escape sequence of the terminal
        _wait_for(session, "keys (any key closes this help)")
        _tmux("send-keys", "-t", session, "x")
        _wait_for(session, "per CPU")
        _tmux("send-keys", "-t", session, ">")
        _wait_for(session, "EV/IV▼", absent=("EVENTS▼",))
        _tmux("send-keys", "-t", session, "I")
        _wait_for(session, "EV/IV▲")
        _tmux("send-keys", "-t", session, "/", "zz[q", "Enter")
        screen = _wait_for(session, "filter: comm~zz[q", "(all processes)")
        assert "filter: comm~zz[q" in screen.splitlines()[0]  # in the header
        assert "EXITED" not in screen  # the q typed into the filter did not quit
        _tmux("send-keys", "-t", session, "Down", "PageDown", "Home", "End", "Tab", "Up")
        _tmux("send-keys", "-t", session, "q")
        _wait_for(session, "EXITED rc=0", "events in")
    finally:
        _tmux("kill-session", "-t", session)
