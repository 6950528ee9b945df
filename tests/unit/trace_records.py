"""``struct trace_event`` record arrays for unit tests, built from header fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ringtool.trace.layout import load_layout


def header_records(rows: list[Mapping[str, Any]]) -> np.ndarray:  # type: ignore[type-arg]
    """One zeroed record per row with the row's header fields set (``type`` by name:
    ``{"type": "open", "pid": 10, "comm": b"a"}``)."""
    lay = load_layout()
    arr = np.zeros(len(rows), dtype=lay.event)
    for i, row in enumerate(rows):
        for key, value in row.items():
            arr[i]["h"][key] = lay.type_id(value) if key == "type" else value
    return arr
