"""Writing many elements of a map at once (``bpf.map_update_many``), in a thread
(:class:`~ringtool.kernel.background_update.BackgroundUpdate`), and the
:class:`~ringtool.readers.ringbuf_group.RingBufGroup` whose ARRAY_OF_MAPS is filled
that way while the caller loads its programs (``fill_later``)."""

from __future__ import annotations

import os
import struct
from contextlib import closing

import pytest

from ringtool.errors import BpfSyscallError
from ringtool.kernel import bpf
from ringtool.kernel.background_update import BackgroundUpdate
from ringtool.kernel.bpf_load import MapSpec, map_create_spec
from ringtool.readers.ringbuf_group import RingBufGroup
from tests.helpers.producers import GROUP_EVENT, GroupProducer

pytestmark = pytest.mark.kernel

#: BPF_MAP_TYPE_DEVMAP: a map type with no batch update (ENOTSUPP on every kernel)
DEVMAP = 14
LOOPBACK_IFINDEX = 1


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def test_an_array_of_maps_holds_every_ring_written_at_once() -> None:
    rings = [bpf.map_create(bpf.MapType.RINGBUF, key_size=0, value_size=0, max_entries=4096)
             for _ in range(3)]  # fmt: skip
    outer = bpf.map_create(bpf.MapType.ARRAY_OF_MAPS, key_size=4, value_size=4,
                           max_entries=4, inner_map_fd=rings[0])  # fmt: skip
    try:
        bpf.map_update_many(outer, [(u32(i), u32(fd)) for i, fd in enumerate(rings)])
        ids = [bpf.map_lookup(outer, u32(i), 4) for i in range(4)]
        assert ids == [u32(bpf.map_info(fd).id) for fd in rings] + [None]
    finally:
        for fd in [outer, *rings]:
            os.close(fd)


def test_a_map_type_without_batch_is_written_one_by_one() -> None:
    devmap = map_create_spec(MapSpec(map_type=DEVMAP, key_size=4, value_size=4,
                                     max_entries=4, flags=0, name="fill_test"), 0)  # fmt: skip
    try:
        with pytest.raises(BpfSyscallError):  # the kernel has no batch for it
            bpf.map_update_batch(devmap, u32(0), u32(LOOPBACK_IFINDEX), 1)
        bpf.map_update_many(devmap, [(u32(k), u32(LOOPBACK_IFINDEX)) for k in (1, 3)])
        got = [bpf.map_lookup(devmap, u32(k), 4) for k in range(4)]
        assert got == [None, u32(LOOPBACK_IFINDEX), None, u32(LOOPBACK_IFINDEX)]
    finally:
        os.close(devmap)


def test_a_background_write_that_fails_raises_in_wait_every_time() -> None:
    read_end, write_end = os.pipe()  # not a map: the kernel refuses the write
    try:
        update = BackgroundUpdate(read_end, [(u32(0), u32(1))])
        for _ in range(2):
            with pytest.raises(BpfSyscallError):
                update.wait()
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_group_filled_later_delivers_every_event_once_filled() -> None:
    with RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16, cpus=[0], fill_later=True) as group:
        group.filled()
        assert bpf.map_lookup(group.rings_fd, u32(0), 4) == u32(bpf.map_info(group.ring_fds[0]).id)
        prod = GroupProducer(group)
        rb = group.consumer()
        try:
            prod.emit(25, 0)
            with closing(rb.read(timeout_ms=0)) as recs:
                seqs = [GROUP_EVENT.unpack_from(r.data)[1] for r in recs]
            assert seqs == list(range(1, 26)) and group.dropped()[0] == 0
        finally:
            rb.close()
            prod.close()


def test_a_group_closed_while_filling_closes_its_maps() -> None:
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16, fill_later=True)
    fd = group.rings_fd
    group.close()  # waits for the thread, then closes: no write to a closed fd
    with pytest.raises(OSError):
        os.fstat(fd)
