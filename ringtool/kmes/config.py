"""KMES configuration: the capacity registry is ``/etc/ringtool/kmes.conf`` (docs/kmes.md
§10.1-10.2).

Format: ``key = value`` lines, ``#`` comments. Known key: ``capacity`` (bytes, a power
of two; suffixes K, M, G = KiB, MiB, GiB allowed). Precedence: an explicit capacity
(``--capacity``), else the file, else the compiled-in default.
"""

from __future__ import annotations

from pathlib import Path

from ringtool.errors import InputFileError, KmesCapacityError, KmesError
from ringtool.kernel.files import read_regular, utf8_text
from ringtool.kmes import layout as L

DEFAULT_CONFIG = "/etc/ringtool/kmes.conf"
#: The largest config file read.
CONFIG_MAX = 64 << 10
_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """``"1048576"``, ``"1M"``, ``"64k"`` -> bytes; ValueError if not a size."""
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    mult = _SUFFIX.get(t[-1:], 1)
    if mult != 1:
        t = t[:-1]
    return int(t, 0) * mult


def parse_config(data: bytes, path: str | Path) -> dict[str, str]:
    """The ``key = value`` pairs of ``data``, the contents of the config file ``path``.
    A KmesError names ``path`` and the line (and column) of what is wrong, never the
    line's text: the file may be one that is not a config file at all (``/etc/shadow``)."""
    try:
        text = utf8_text(data)
    except ValueError as exc:
        raise KmesError(f"{path}: {exc}") from None
    values: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise KmesError(f"{path}: line {lineno} is not a `key = value` line (no '=')")
        values[key.strip().lower()] = value.strip()
    return values


def read_config(path: str | Path) -> dict[str, str]:
    """The file's ``key = value`` pairs ({} if it does not exist). Read as
    :func:`ringtool.kernel.files.read_regular` reads: a FIFO or a device is refused
    before it is opened, and at most :data:`CONFIG_MAX` bytes are read."""
    try:
        data = read_regular(path, CONFIG_MAX)
    except FileNotFoundError:
        return {}
    except InputFileError as exc:
        raise KmesError(f"cannot read {path}: {exc.why}") from None
    except OSError as exc:
        raise KmesError(f"cannot read {path}: {exc.strerror}") from None
    return parse_config(data, path)


def resolve_capacity(explicit: int | None, path: str | Path = DEFAULT_CONFIG) -> int:
    """The capacity to use (checked: a power of two in range, else KmesCapacityError)."""
    if explicit is not None:
        return L.check_capacity(explicit)
    value = read_config(path).get("capacity")
    if value is None:
        return L.DEFAULT_CAPACITY
    try:
        capacity = parse_size(value)
    except ValueError:
        raise KmesCapacityError(
            f"{path}: the capacity is not a size in bytes (e.g. 1048576 or 1M)"
        ) from None
    try:
        return L.check_capacity(capacity)
    except KmesCapacityError as exc:
        raise KmesCapacityError(f"{path}: {exc}") from None
