"""MapTable (the program cache's tables) on real maps: what ringtool does with a BCC
table (write, read, iterate, batch-read, clear) gives the same on it."""

from __future__ import annotations

import os

import pytest

from ringtool.errors import ArgumentError
from ringtool.kernel import bpf
from ringtool.kernel.c_ints import u32
from ringtool.programs.table_view import MapTable

pytestmark = pytest.mark.kernel


def test_a_hash_table_reads_back_what_was_written_one_by_one_and_by_batch() -> None:
    fd = bpf.map_create(bpf.MapType.HASH, key_size=8, value_size=8, max_entries=10000)
    try:
        table = MapTable(fd, bpf.MapType.HASH, 8, 8, 10000)
        want = {(nr << 32) | nr: nr * 3 for nr in range(5000)}  # more than one batch
        for k, v in want.items():
            table[k] = v
        assert {k.value: v.value for k, v in table.items()} == want
        assert {k.value: v.value for k, v in table.items_lookup_batch()} == want
        assert len(table) == 5000 and table[7 << 32 | 7].value == 21
        table.clear()
        assert len(table) == 0 and table.items_lookup_batch() == []
        with pytest.raises(KeyError):
            table[1]
    finally:
        os.close(fd)


def test_an_array_takes_ctypes_keys_and_clears_to_zeros() -> None:
    fd = bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=4, max_entries=4)
    try:
        table = MapTable(fd, bpf.MapType.ARRAY, 4, 4, 4)
        table[table.Key(1)] = table.Leaf(77)  # as hist_maps writes the drill pid
        table[u32(2)] = u32(5)  # as seed_parents writes
        assert [(k.value, v.value) for k, v in table.items()] == [(0, 0), (1, 77), (2, 5),
                                                                  (3, 0)]  # fmt: skip
        table.clear()
        assert [v.value for _, v in table.items()] == [0, 0, 0, 0]
        with pytest.raises(ArgumentError, match="does not fit"):
            table[1] = 1 << 40
        with pytest.raises(ArgumentError, match="8 bytes given"):
            table[1] = b"12345678"
    finally:
        os.close(fd)
