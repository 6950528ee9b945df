"""The busiest connections and disks of a host (export/busiest.py), on hand-built
records and lines: the top by bytes is the sum per connection, the disks' counts and
bytes are exact, the p99 is an upper bound within one bucket (1/8) of the true one."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.errors import BadMessageError
from ringtool.export.busiest import MAX_CONNS, SUB, TOP, Busiest, buckets, quantile_ns
from tests.helpers.busy_records import (
    LAYOUT,
    disk_records,
    records,
    tcp_records,
    top_by_bytes,
    true_p99,
)
from tests.helpers.records import SETTINGS

CONNS = [
    ("10.0.0.1", 40000, "10.0.0.9", 443, 5000, 100, 11, b"curl"),
    ("10.0.0.1", 40001, "10.0.0.9", 443, 70, 30, 12, b"wget"),
    ("10.0.0.1", 40000, "10.0.0.9", 443, 1000, 0, 13, b"curl2"),  # same connection again
    ("::1", 5432, "::1", 50000, 1 << 40, 7, 14, b"postgres"),
    ("192.168.1.2", 22, "192.168.1.77", 61000, 0, 0, 15, b"sshd"),
]


def test_top_connections_are_summed_per_connection_and_ordered() -> None:
    b = Busiest()
    b.add_records(records(tcp_records(CONNS[:2])), LAYOUT)
    b.add_records(records(tcp_records(CONNS[2:])), LAYOUT)  # a second batch adds up
    got = b.record()["connections"]
    want = top_by_bytes(CONNS, TOP)
    assert [{k: c[k] for k in want[0]} for c in got] == want
    assert got[0]["comm"] == "postgres" and got[0]["bytes"] == (1 << 40) + 7
    curl = next(c for c in got if c["lport"] == 40000)
    assert curl["pid"] == 13 and curl["comm"] == "curl2"  # the last close's owner


def test_lines_give_what_rows_give() -> None:
    rows, lines = Busiest(), Busiest()
    rows.add_records(records(tcp_records(CONNS)), LAYOUT)
    lines.add_lines("tcp", [json.dumps({"type": "tcp", "laddr": c[0], "lport": c[1],
                                        "raddr": c[2], "rport": c[3], "tx_bytes": c[4],
                                        "rx_bytes": c[5], "pid": c[6],
                                        "comm": c[7].decode()}) for c in CONNS])  # fmt: skip
    assert rows.record()["connections"] == lines.record()["connections"]


def test_a_line_without_its_fields_is_a_bad_message() -> None:
    with pytest.raises(BadMessageError):
        Busiest().add_lines("tcp", ['{"type": "tcp", "ts": 1.0, "laddr": "1.2.3.4"}'])
    with pytest.raises(BadMessageError):
        Busiest().add_lines("disk", ['{"type": "disk", "ts": 1.0, "dev": "8:0", "bytes": "x"}'])


def test_disks_per_device_counts_bytes_rates_and_p99() -> None:
    ios = [(8, 0, 4096, 100_000 + 1000 * i) for i in range(200)] + [(8, 0, 8192, 50_000_000)] * 3
    ios += [(259, 1, 512, 20_000)] * 10
    b = Busiest()
    b.add_records(records(disk_records(ios[:100])), LAYOUT)
    b.add_records(records(disk_records(ios[100:])), LAYOUT)
    b.tick(2.0)
    d = {x["dev"]: x for x in b.record()["disks"]}
    sda = [io for io in ios if io[0] == 8]
    assert d["8:0"]["requests"] == len(sda) and d["8:0"]["bytes"] == sum(io[2] for io in sda)
    assert d["8:0"]["iops"] == len(sda) / 2 and d["8:0"]["bytes_per_s"] == d["8:0"]["bytes"] / 2
    want = true_p99([io[3] for io in sda])
    assert want / 1000 <= d["8:0"]["p99_us"] <= want * (1 + 1 / SUB) / 1000
    assert d["8:0"]["p99_us"] == d["8:0"]["p99_us_all"]
    assert d["259:1"]["requests"] == 10
    b.tick(1.0)  # an interval without requests
    d = {x["dev"]: x for x in b.record()["disks"]}
    assert d["8:0"]["iops"] == 0 and d["8:0"]["p99_us"] == 0 and d["8:0"]["requests"] == 203


@SETTINGS
@given(st.lists(st.integers(0, 2**63), min_size=1, max_size=300))
def test_p99_is_an_upper_bound_within_a_bucket(values: list[int]) -> None:
    hist = np.bincount(buckets(np.array(values, np.uint64)), minlength=64 * SUB)
    got, want = quantile_ns(hist, 0.99), max(true_p99(values), 1)
    assert want <= got <= want * (1 + 1 / SUB) * (1 + 1e-12)


def test_connections_kept_are_bounded() -> None:
    b = Busiest()
    conns = [("10.0.0.1", p % 65536, "10.0.0.2", 80, p, 0, 1, b"x") for p in range(MAX_CONNS + 10)]
    b.add_records(records(tcp_records(conns)), LAYOUT)
    assert len(b.conns) <= MAX_CONNS and b.conns_dropped > 0
    assert b.record()["connections"][0]["tx_bytes"] == MAX_CONNS + 9
