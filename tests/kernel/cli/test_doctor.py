"""`ringtool doctor` on this machine, as root and as an unprivileged user."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli_values import AS_NOBODY
from tests.helpers.paths import RINGTOOL, ROOT

pytestmark = pytest.mark.kernel


def test_doctor_passes_as_root() -> None:
    res = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    names = [ln.split()[1] for ln in res.stdout.splitlines() if ln[:1] in "✓✗-"]
    for required in ("kernel", "privileges", "bpf()", "perf_event_open", "tracefs", "BCC"):
        assert required in names, res.stdout
    assert "kernel headers" in res.stdout and res.stdout.rstrip().endswith("ready")


def test_doctor_as_nobody_fails_with_fixes_and_no_traceback() -> None:
    res = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *RINGTOOL, "doctor"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert res.returncode == 1
    assert "Traceback" not in res.stdout + res.stderr
    assert "✗ privileges" in res.stdout and "fix: run with sudo" in res.stdout


def _labels(stdout: str) -> list[str]:
    """The check labels of doctor's lines, in order, each once (a check may give
    several lines under one label: one per tracepoint layout)."""
    labels: list[str] = []
    for ln in stdout.splitlines():
        if ln[:2] in ("✓ ", "✗ ", "- "):
            label = ln[2:].split("  ")[0].strip()
            if label not in labels:
                labels.append(label)
    return labels


def test_doctor_as_nobody_has_the_labels_of_root() -> None:
    """A user's run lists every check of root's run under the same label, in the same
    order; the checks it could not do say so and why, with the fix."""
    root = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)  # fmt: skip
    user = subprocess.run([*AS_NOBODY, *RINGTOOL, "doctor"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    assert root.returncode == 0 and user.returncode == 1, root.stdout + user.stdout
    assert _labels(user.stdout) == _labels(root.stdout), (root.stdout, user.stdout)
    lines = user.stdout.splitlines()
    not_done = [i for i, ln in enumerate(lines) if "not tried" in ln]
    assert len(not_done) >= 5, user.stdout  # maps, perf, overwrite, markers, BCC, ...
    for i in not_done:
        assert "needs root or CAP_BPF+CAP_PERFMON" in lines[i], lines[i]
        assert lines[i + 1].strip() == "fix: run with sudo", user.stdout


def test_doctor_reports_each_tracepoint_layout_choice() -> None:
    """One line per layout-dependent field, agreeing with the raw format file."""
    from ringtool.event.registry import NEEDS

    STRING_FIELDS = NEEDS.string_fields  # what every event type reads

    res = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120)
    lines = [ln for ln in res.stdout.splitlines() if "tracepoint layout" in ln]
    assert len(lines) == len(STRING_FIELDS), res.stdout
    for spec, line in zip(STRING_FIELDS, lines, strict=True):
        fmt = Path(f"/sys/kernel/tracing/events/{spec.category}/{spec.event}/format").read_text()
        data_loc = f"__data_loc char[] {spec.field};" in fmt
        assert line.startswith("✓ tracepoint layout")
        assert f"{spec.category}:{spec.event} {spec.field} is " in line
        assert line.endswith(f"-D{spec.define}={int(data_loc)}")


def test_doctor_reports_the_members_read_by_address() -> None:
    """The tcp source's socket counters, at the offsets the kernel's BTF gives."""
    from ringtool.event.registry import NEEDS
    from ringtool.kernel.btf import field_offsets

    res = subprocess.run([*RINGTOOL, "doctor"], capture_output=True, text=True, timeout=120)
    line = next(ln for ln in res.stdout.splitlines() if "BTF members" in ln)
    assert line.startswith("✓"), res.stdout
    for m in NEEDS.members:
        offsets = field_offsets([m.member], m.size)
        assert offsets is not None and f"{m.member} at {offsets[0]}" in line, line
