"""Argument checks of the reader APIs: each bad value is an :class:`ArgumentError`
(or :class:`MapTypeError`) naming the argument, never a builtin error from deep inside."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ringtool.errors import ArgumentError, MapTypeError

#: "No limit" for record counts.
UNLIMITED = 2**63


def map_fd_of(map_: Any) -> int:
    """The fd of ``map_``: a BCC table (its ``.map_fd``) or a raw map fd.

    Raises :class:`MapTypeError` for anything else."""
    if is_int(map_):
        return int(map_)
    if hasattr(map_, "map_fd"):
        return int(map_.map_fd)
    raise MapTypeError(f"expected a BCC table or a map fd, got {type(map_).__name__}")


def is_int(v: object) -> bool:
    """An int that is not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


def check_callable(name: str, cb: object) -> None:
    """Raise ArgumentError unless ``cb`` is None or callable."""
    if cb is not None and not callable(cb):
        raise ArgumentError(f"{name} must be callable or None, not {type(cb).__name__}")


def check_limit(name: str, limit: int | None) -> int:
    """``limit`` as a record count (None: unlimited); ArgumentError if negative."""
    if limit is None:
        return UNLIMITED
    if not is_int(limit) or limit < 0:
        raise ArgumentError(f"{name} must be an int >= 0 (or None for no limit), not {limit!r}")
    return limit


def check_timeout(timeout_ms: float) -> None:
    """A wait in ms: any negative value waits forever, 0 not at all."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float):
        raise ArgumentError(f"timeout_ms must be a number of ms, not {timeout_ms!r}")
    if math.isnan(timeout_ms):
        raise ArgumentError("timeout_ms must be a number of ms, not NaN")


def check_dtype(dtype: Any) -> np.dtype[Any]:
    """``dtype`` as a numpy dtype that fixed-size ring records can be decoded into."""
    try:
        dt: np.dtype[Any] = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"dtype {dtype!r} is not a numpy dtype: {exc}") from None
    if dt.hasobject or dt.itemsize == 0 or dt.subdtype is not None:
        raise ArgumentError(
            f"dtype {dt} can't hold ring records: use a plain or structured dtype of "
            "fixed-size fields (no objects, not empty, no subarray at top level)"
        )
    return dt
