"""ringtool: eBPF tracing with its own mmap consumers for BPF_MAP_TYPE_RINGBUF and
BPF_MAP_TYPE_PERF_EVENT_ARRAY maps, a KMES shared-memory bridge and ordered merges.

Public names are imported lazily so ``import ringtool`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ringtool import errors

__version__ = "0.1.0"
__all__ = ["PerfBuffer", "RingBufGroup", "RingBuffer", "UserRingBuffer", "__version__", "errors"]

_LAZY = {
    "RingBuffer": "ringtool.readers.ringbuf",
    "PerfBuffer": "ringtool.readers.perfbuf",
    "RingBufGroup": "ringtool.readers.ringbuf_group",
    "UserRingBuffer": "ringtool.readers.user_ringbuf",
}

if TYPE_CHECKING:
    from ringtool.readers.perfbuf import PerfBuffer
    from ringtool.readers.ringbuf import RingBuffer
    from ringtool.readers.ringbuf_group import RingBufGroup
    from ringtool.readers.user_ringbuf import UserRingBuffer


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (``ringtool.RingBuffer``, ...)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ringtool' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
