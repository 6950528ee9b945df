"""Counting small integer codes without a sort: :func:`code_counts` (the type split of
every mixed batch, the per-type counts of the stats) and :func:`call_names` (the
``syscall`` column of open and exec events) give what counting and looking up one value
at a time gives, for every dtype and any values; and the first mixed batch through the
trace's batch path imports no module (the type split's first ``np.unique`` call
imported ``numpy.ma``, ~10 ms, while the first batch's ring filled: drops at start)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.calls import NAMES, call_names
from ringtool.event.columns import SMALL_CODES, code_counts
from tests.helpers.records import SETTINGS

DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64]


@SETTINGS
@given(
    dtype=st.sampled_from(DTYPES),
    values=st.lists(
        st.one_of(st.integers(0, 40), st.integers(0, 2 * SMALL_CODES), st.integers(-5, 2**31 - 1)),
        max_size=200,
    ),
)
def test_code_counts_equals_counting_one_by_one(dtype: type, values: list[int]) -> None:
    info = np.iinfo(dtype)
    values = [v for v in values if info.min <= v <= info.max]
    col: np.ndarray[Any, Any] = np.array(values, dtype=dtype)
    counted = sorted(Counter(values).items())
    assert code_counts(col) == ([v for v, _ in counted], [c for _, c in counted])


@SETTINGS
@given(
    dtype=st.sampled_from([np.uint8, np.uint16, np.uint32, np.int32]),
    values=st.lists(st.integers(-3, 300), max_size=100),
)
def test_call_names_equals_looking_each_value_up(dtype: type, values: list[int]) -> None:
    info = np.iinfo(dtype)
    values = [v for v in values if info.min <= v <= info.max]
    col: np.ndarray[Any, Any] = np.array(values, dtype=dtype)
    assert call_names(col) == [NAMES.get(v) for v in values]


def test_the_first_mixed_batch_imports_nothing() -> None:
    """What the trace builds before its sources are attached (the outputs, the stats,
    the ``-n`` filter) imports no module in its first batch (before: the type split's
    ``np.unique(types)`` imported ``numpy.ma`` on its first call, ~10 ms)."""
    code = (
        "import io, re, sys\n"
        "from ringtool.event.decode import Decoder\n"
        "from ringtool.event.layout import load_layout\n"
        "from ringtool.event.records import Records\n"
        "from ringtool.trace.reading.filters import NameFilter\n"
        "from ringtool.trace.writers.output_columns import ColumnOutput\n"
        "from ringtool.trace.writers.output_json import JsonOutput\n"
        "from ringtool.trace.report.stats import TraceStats\n"
        "from tests.helpers.records import record_array\n"
        "types = [1, 2, 1, 3, 2]\n"
        "comms = [b'a', b'b', b'a', b'c', b'b']\n"
        "recs = [(t, 10**12 + i, 0, c, b'/x', b'', 0, 0, 0)\n"
        "        for i, (t, c) in enumerate(zip(types, comms))]\n"
        "arr = record_array(recs)\n"
        "dec = Decoder(load_layout(), realtime_offset_ns=0)\n"
        "made = [JsonOutput(io.StringIO(), dec), ColumnOutput(io.StringIO(), dec)]\n"
        "stats = TraceStats(dec.types, 2, ['exec', 'open'], dec.syscall_name)\n"
        "keep = NameFilter(re.compile('a|b'))\n"
        "before = set(sys.modules)\n"
        "assert len(keep.keep(arr)) == 4\n"
        "for out in made:\n"
        "    out.batch(Records(arr))\n"
        "stats.add_batch(arr)\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[]\n"
