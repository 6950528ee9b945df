"""Every ``ringtool trace --json`` line a test reads is checked against the committed
JSON Schema (docs/trace-events.schema.json, generated from the field tables):
:func:`check_lines`. :class:`tests.helpers.trace.Trace`, :func:`tests.helpers.trace.told_json`
and :func:`tests.helpers.procs.run_ringtool` call it on what a ``trace --json`` wrote."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from functools import cache
from typing import Any

import jsonschema

from ringtool.event.registry import BY_NAME
from tests.helpers.paths import ROOT

SCHEMA_PATH = ROOT / "docs" / "trace-events.schema.json"


@cache
def _validator(partial: bool) -> Any:
    schema = json.loads(SCHEMA_PATH.read_text())
    if partial:  # --fields: an event line holds only the chosen keys (maybe not type)
        schema = copy.deepcopy(schema)
        for name in BY_NAME:
            schema["$defs"][name]["required"] = []
        schema["anyOf"] = schema.pop("oneOf")  # a line without type may fit several
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def check_lines(lines: Iterable[str], partial: bool = False) -> list[dict[str, Any]]:
    """The JSON objects of ``lines`` (blank ones skipped), each checked against the
    schema: an AssertionError names the first line that does not validate and why.
    ``partial``: the trace ran with ``--fields`` (an event line holds some of its
    type's keys, each of its JSON type)."""
    validator = _validator(partial)
    out = []
    for line in lines:
        if not line.strip():
            continue
        obj = json.loads(line)
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            raise AssertionError(f"--json line does not validate ({best.message}): {line}")
        out.append(obj)
    return out


def check_trace_output(argv: Iterable[str], stdout: Iterable[str], stderr: Iterable[str]) -> None:
    """Check what ``ringtool trace ARGV`` wrote when ``--json`` is among ``argv``: every
    stdout line, and the stderr lines that are JSON objects."""
    args = list(argv)
    if "--json" not in args:
        return
    partial = any(a == "--fields" or a.startswith("--fields=") for a in args)
    check_lines(stdout, partial)
    check_lines((line for line in stderr if line.startswith("{")), partial)
