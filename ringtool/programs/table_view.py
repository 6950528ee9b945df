"""A BPF map as the mapping ringtool uses a BCC table as (:class:`MapTable`), for
programs loaded from the program cache (:mod:`ringtool.programs.cached`).

Keys and values are integers of the map's key/value size (1, 2, 4 or 8 bytes,
little-endian, as BCC's ctypes scalars for its ``unsigned int``/``u64``/... types) or
raw bytes of other sizes. Anything with a buffer of the right size is accepted on
write (a ctypes value, bytes) as well as an int; an int of the wrong width or a
buffer of the wrong size is a :class:`ringtool.errors.ArgumentError`.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from ringtool.errors import ArgumentError
from ringtool.kernel import bpf
from ringtool.kernel.bpf_load import map_lookup_batch, map_next_key

_ARRAYS = (2, 6)  # BPF_MAP_TYPE_ARRAY, PERCPU_ARRAY: keys can't be deleted
_SCALAR = (1, 2, 4, 8)


class IntOf:
    """A key/value type of BCC's shape: ``Key(5)`` gives the 5 to write, and a
    value read has ``.value`` (the int)."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntOf) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"IntOf({self.value})"


class MapTable(MutableMapping[Any, Any]):
    """The map ``map_fd`` (owned by the caller) with keys of ``key_size`` and values
    of ``value_size`` bytes, at most ``max_entries``; ``map_type`` decides what
    :meth:`clear` does (arrays are zeroed, other maps emptied). Reads give
    :class:`IntOf` for scalar sizes, bytes otherwise; per-CPU maps are read with
    :func:`ringtool.kernel.bpf.percpu_u64`."""

    Key = IntOf
    Leaf = IntOf

    def __init__(
        self, map_fd: int, map_type: int, key_size: int, value_size: int, max_entries: int
    ) -> None:
        self.map_fd = map_fd
        self.max_entries = max_entries
        self.map_type = map_type
        self.key_size = key_size
        self.value_size = value_size

    def _raw(self, x: Any, size: int) -> bytes:
        if isinstance(x, (int, IntOf)):
            n = int(x)
            if size not in _SCALAR or not -(1 << (8 * size - 1)) <= n < (1 << (8 * size)):
                raise ArgumentError(f"{n} does not fit a {size}-byte key or value")
            return (n % (1 << (8 * size))).to_bytes(size, "little")
        raw = bytes(memoryview(x))
        if len(raw) != size:
            raise ArgumentError(f"{len(raw)} bytes given where the map has {size}")
        return raw

    def _value(self, raw: bytes) -> Any:
        return IntOf(int.from_bytes(raw, "little")) if len(raw) in _SCALAR else raw

    def __getitem__(self, key: Any) -> Any:
        raw = bpf.map_lookup(self.map_fd, self._raw(key, self.key_size), self.value_size)
        if raw is None:
            raise KeyError(key)
        return self._value(raw)

    def __setitem__(self, key: Any, value: Any) -> None:
        bpf.map_update(
            self.map_fd, self._raw(key, self.key_size), self._raw(value, self.value_size)
        )

    def __delitem__(self, key: Any) -> None:
        bpf.map_delete(self.map_fd, self._raw(key, self.key_size))

    def _keys(self) -> Iterator[bytes]:
        key: bytes | None = None
        while (key := map_next_key(self.map_fd, key, self.key_size)) is not None:
            yield key

    def __iter__(self) -> Iterator[Any]:
        return (self._value(k) for k in list(self._keys()))

    def __len__(self) -> int:
        return sum(1 for _ in self._keys())

    def items_lookup_batch(self) -> list[tuple[Any, Any]]:
        """Every item in a few BPF_MAP_LOOKUP_BATCH calls (as BCC's method of that
        name); a BpfSyscallError where the kernel or map type has none."""
        pairs = map_lookup_batch(self.map_fd, self.key_size, self.value_size)
        return [(self._value(k), self._value(v)) for k, v in pairs]

    def clear(self) -> None:
        """Empty the map (an array: every value zeroed)."""
        keys = list(self._keys())
        for key in keys:
            if self.map_type in _ARRAYS:
                bpf.map_update(self.map_fd, key, bytes(self.value_size))
            else:
                bpf.map_delete(self.map_fd, key)


__all__ = ["IntOf", "MapTable"]
