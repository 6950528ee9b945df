"""htop habits of the ``ringtool trace`` dashboard in a real terminal (tmux): the help
overlay, the sort marker, the filter in the header."""

from __future__ import annotations

import pytest

from tests.helpers.tmux import RUN, Terminal, needs_tmux

# host_only: the dashboard's (or the columns') drawing and keys on a terminal, nothing
# of the kernel's version; the maps and rings they read are tested on every kernel
# (the all_kernels tests). CI runs these on the host.
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


@needs_tmux
@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40), (200, 60)])
def test_keys_in_tmux(w: int, h: int) -> None:
    cmd = f"{RUN} trace --interval 0.3; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, w, h)
    try:
        term.wait_for("per CPU", "EVENTS▼", "? help", absent=("EV/IV▼",))
        term.send("?")
        term.wait_for("any other key closes", "invert the sort order",
                      "drill down into the selected process", absent=("per CPU",))  # fmt: skip
        term.send("Escape")
        term.wait_for("per CPU", "EVENTS▼")
        term.send("F1")  # the escape sequence of the terminal
        term.wait_for("any other key closes")
        term.send("x")
        term.wait_for("per CPU")
        term.send(">")
        term.wait_for("EV/IV▼", absent=("EVENTS▼",))
        term.send("I")
        term.wait_for("EV/IV▲")
        term.send("/", "zz[q", "Enter")
        screen = term.wait_for("filter: comm~zz[q", "(all processes)")
        assert "filter: comm~zz[q" in screen.splitlines()[0]  # in the header
        assert "EXITED" not in screen  # the q typed into the filter did not quit
        term.send("Down", "PageDown", "Home", "End", "Tab", "Up")
        term.send("q")
        term.wait_for("EXITED rc=0", "events in")
    finally:
        term.close()
