"""htop habits of the ``ringtool trace`` dashboard in a real terminal (tmux): the help
overlay, the sort marker, the filter in the header."""

from __future__ import annotations

import uuid

import pytest

from tests.helpers.tmux import RUN, needs_tmux, tmux, wait_for_screen

pytestmark = pytest.mark.kernel


@needs_tmux
@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40), (200, 60)])
def test_keys_in_tmux(w: int, h: int) -> None:
    session = f"rt-{uuid.uuid4().hex[:8]}"
    cmd = f"{RUN} trace --interval 0.3; echo EXITED rc=$?; sleep 60"
    tmux("new-session", "-d", "-s", session, "-x", str(w), "-y", str(h), cmd)
    try:
        wait_for_screen(session, "per CPU", "EVENTS▼", "? help", absent=("EV/IV▼",))
        tmux("send-keys", "-t", session, "?")
        wait_for_screen(session, "keys (any key closes this help)", "invert the sort order",
                  "drill down into the selected process", absent=("per CPU",))  # fmt: skip
        tmux("send-keys", "-t", session, "Escape")
        wait_for_screen(session, "per CPU", "EVENTS▼")
        tmux("send-keys", "-t", session, "F1")  # the escape sequence of the terminal
        wait_for_screen(session, "keys (any key closes this help)")
        tmux("send-keys", "-t", session, "x")
        wait_for_screen(session, "per CPU")
        tmux("send-keys", "-t", session, ">")
        wait_for_screen(session, "EV/IV▼", absent=("EVENTS▼",))
        tmux("send-keys", "-t", session, "I")
        wait_for_screen(session, "EV/IV▲")
        tmux("send-keys", "-t", session, "/", "zz[q", "Enter")
        screen = wait_for_screen(session, "filter: comm~zz[q", "(all processes)")
        assert "filter: comm~zz[q" in screen.splitlines()[0]  # in the header
        assert "EXITED" not in screen  # the q typed into the filter did not quit
        tmux("send-keys", "-t", session, "Down", "PageDown", "Home", "End", "Tab", "Up")
        tmux("send-keys", "-t", session, "q")
        wait_for_screen(session, "EXITED rc=0", "events in")
    finally:
        tmux("kill-session", "-t", session)
