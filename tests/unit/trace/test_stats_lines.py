"""Periodic stats lines come only when asked (``--stats``): stdout carries the events,
stderr the notes, as bcc's tools print only their events. An interval in which the
kernel dropped or lost events still gets its line (a drop is never silent until the
summary, as bcc's "Possibly lost N samples"). Every stream output alike: JSON, columns,
CSV and the ``--fields`` columns."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import TextIO

import pytest

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.outputs import RunConfig, make_output
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.sink import Output
from ringtool.trace.writers.output_columns import ColumnOutput
from ringtool.trace.writers.output_fields import CsvOutput, FieldColumnOutput
from ringtool.trace.writers.output_json import JsonOutput

Make = Callable[[TextIO, Decoder, TextIO, bool], Output[TraceStats]]

OUTPUTS: dict[str, Make] = {
    "json": lambda out, dec, err, every: JsonOutput(out, dec, err=err, stats_lines=every),
    "columns": lambda out, dec, err, every: ColumnOutput(out, dec, err=err, stats_lines=every),
    "csv": lambda out, dec, err, every: CsvOutput(out, dec, err=err, stats_lines=every),
    "fields": lambda out, dec, err, every: FieldColumnOutput(
        out, dec, ["pid", "comm"], err=err, stats_lines=every
    ),
}


def _intervals(make: Make, every: bool) -> tuple[str, list[str]]:
    """Three intervals (quiet, with drops, quiet) through one output: stdout, stderr lines."""
    lay = load_layout()
    out, err = io.StringIO(), io.StringIO()
    output = make(out, Decoder(lay), err, every)
    st = TraceStats(lay.type_names, 2, ["open"])
    for drops in ([0, 0], [3, 1], [3, 1]):  # the counters are cumulative
        st.tick(drops_cpu=drops)
        output.stats(st)
    return out.getvalue(), err.getvalue().splitlines()


@pytest.mark.parametrize("name", OUTPUTS)
def test_without_stats_only_the_interval_with_drops_has_a_line(name: str) -> None:
    out, told = _intervals(OUTPUTS[name], every=False)
    assert out == ""  # never on stdout
    assert len(told) == 1, told
    if name == "json":
        assert json.loads(told[0])["dropped_interval"] == 4
    else:
        assert told[0].startswith("-- ") and "drops 4" in told[0], told


@pytest.mark.parametrize("name", OUTPUTS)
def test_with_stats_every_interval_has_a_line(name: str) -> None:
    out, told = _intervals(OUTPUTS[name], every=True)
    assert out == ""
    assert len(told) == 3, told
    if name == "json":
        assert [json.loads(t)["dropped_interval"] for t in told] == [0, 4, 0]
    else:
        assert all(t.startswith("-- ") for t in told), told


@pytest.mark.parametrize("mode", ["json", "csv", "columns"])
def test_the_run_config_says_which(mode: str) -> None:
    """``--stats`` reaches the output the run makes (``RunConfig.stats_lines``)."""
    lay = load_layout()
    for every in (False, True):
        cfg = RunConfig(mode=mode, stats_lines=every)
        output = make_output(cfg, Decoder(lay), io.StringIO())
        assert getattr(output, "stats_lines", None) is every
