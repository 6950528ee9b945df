"""What a user sees on stderr when ``ringtool trace`` starts, on every kernel: ringtool's
own lines only. BCC compiles the sources against the running kernel's headers; with a
kernel newer than its clang (Debian 12's clang 14 and Linux 6.12's headers) clang
printed a dozen warnings per source about those headers onto the user's terminal
before the first line of the trace."""

from __future__ import annotations

import pytest

from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel


def test_the_default_sources_start_without_compiler_noise() -> None:
    proc = Trace("--no-tui", "-d", "1")  # the default start timeout: emulated guests' too
    _lines, err = proc.finish()
    told = err.splitlines()
    assert told[:2] == ["sources: exec, open, syscalls", "Tracing... Ctrl-C to end."], told[:10]
    assert not [line for line in told if "warning" in line or ".h:" in line], told[:10]
