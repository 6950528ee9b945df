"""Per-CPU ring buffer groups: the CPU -> buffer id layout (pure, no root needed)."""

from __future__ import annotations

import pytest

from ringtool.readers.ringbuf_group import BPF_INCLUDE_DIR, assign_buffers


@pytest.mark.parametrize(
    ("cpus", "n", "mapping", "buffers"),
    [
        ([0, 1, 2, 3], 1, {0: 0, 1: 1, 2: 2, 3: 3}, 4),
        ([0, 1, 2, 3], 2, {0: 0, 1: 0, 2: 1, 3: 1}, 2),
        ([0, 1, 2, 3], 0, {0: 0, 1: 0, 2: 0, 3: 0}, 1),
        ([0, 1, 2], 2, {0: 0, 1: 0, 2: 1}, 2),
        # CPU 1 offline: buffer ids stay contiguous (buffer ids, not CPU ids)
        ([0, 2, 3], 1, {0: 0, 2: 1, 3: 2}, 3),
        ([3, 0, 2], 2, {0: 0, 2: 0, 3: 1}, 2),
        ([5], 4, {5: 0}, 1),
    ],
)
def test_assign_buffers(cpus: list[int], n: int, mapping: dict[int, int], buffers: int) -> None:
    layout = assign_buffers(cpus, n)
    assert layout.cpu_to_buffer == mapping
    assert layout.buffers == buffers
    assert sorted(set(mapping.values())) == list(range(buffers))
    assert [c for b in range(buffers) for c in layout.cpus_of(b)] == sorted(cpus)


def test_assign_buffers_rejects() -> None:
    with pytest.raises(ValueError):
        assign_buffers([0, 1], -1)
    with pytest.raises(ValueError):
        assign_buffers([], 1)


def test_header_is_shipped() -> None:
    text = (BPF_INCLUDE_DIR / "percpu_ringbuf.h").read_text()
    for name in ("RT_PCPU_RINGS_FD", "RT_PCPU_CPUMAP_FD", "RT_PCPU_DROPS_FD", "rt_pcpu_output"):
        assert name in text
