"""`ringtool doctor`'s `bpffs access` line: a bpffs any user may write (the kernel's
default mode 1777) or a pin root ringtool would refuse is flagged, with the fix; each
on a fresh bpffs in a private mount namespace."""

from __future__ import annotations

import pytest

from tests.helpers.bpffs import in_fresh_bpffs

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # signals, paths, modes: not the kernel


def access_lines(setup: str = ":", mode: str | None = None) -> list[str]:
    """The doctor's `bpffs access` line, and its fix line when it has one."""
    done = in_fresh_bpffs(setup, ["doctor"], mode=mode)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    i = next(i for i, line in enumerate(lines) if "bpffs access" in line)
    return [lines[i]] + [ln for ln in lines[i + 1 : i + 2] if ln.strip().startswith("fix:")]


def test_a_bpffs_any_user_may_write_is_flagged_with_the_fix() -> None:
    line, fix = access_lines()
    assert line.startswith("-"), line  # advisory: ringtool refuses what it did not make
    assert "/sys/fs/bpf is mode 1777: any user may create entries there" in line
    assert fix.strip() == (
        "fix: chmod 1700 /sys/fs/bpf; mount bpffs with -o mode=700 (make setup does)"
    )


def test_a_bpffs_mounted_mode_700_passes() -> None:
    (line,) = access_lines(mode="700")
    assert not line.startswith("-") and line.endswith("/sys/fs/bpf is mode 1700"), line


def test_a_planted_pin_root_is_flagged() -> None:
    (line,) = access_lines("runuser -u nobody -- mkdir /sys/fs/bpf/ringtool")
    assert line.startswith("-")
    assert "refusing /sys/fs/bpf/ringtool: it is owned by uid " in line
