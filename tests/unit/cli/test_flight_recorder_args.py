"""``trace --flight-recorder``: a bad SIZE or a combination it can't serve is one line on
stderr naming the flag, exit status 2, no traceback (the real CLI, nothing loaded)."""

from __future__ import annotations

import subprocess

import pytest

from ringtool.cli.main import build_parser
from ringtool.cli.trace import check
from tests.helpers.paths import RINGTOOL, ROOT

BAD = [
    ["--flight-recorder", "100K"],  # not a power of two
    ["--flight-recorder", "2K"],  # under a page
    ["--flight-recorder", "2048M"],  # over the per-CPU limit
    ["--flight-recorder", "lots"],
    ["--flight-recorder", "-64K"],
    ["--flight-recorder", "1M", "--ordered"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_flight_recorder_is_one_line(argv: list[str]) -> None:
    res = subprocess.run(
        [*RINGTOOL, "trace", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    lines = res.stderr.splitlines()
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and len(lines) == 1, res.stderr
    assert "--flight-recorder" in lines[0] and lines[0].startswith("ringtool"), res.stderr
    assert res.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["--flight-recorder", "1M", "--events", "net", "-i", "lo"],
        ["--flight-recorder", "64K", "-i", "lo", "--pcap", "fr.pcapng"],
        ["--flight-recorder", "64K", "--events", "exec,net", "-i", "lo", "--pcap", "fr.pcapng"],
    ],
    ids=["net", "pcap", "exec+net+pcap"],
)
def test_flight_recorder_takes_the_net_source_and_pcap(argv: list[str]) -> None:
    args = build_parser().parse_args(["trace", *argv])
    check(args)  # no UsageError: the packets are kept and dumped like the events
    assert args.flight_recorder == int(argv[1][:-1]) << (20 if argv[1][-1] == "M" else 10)
