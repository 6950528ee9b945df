"""The read protocols over plain buffers and positions: RINGBUF
(`protocol/ringbuf.py`), perf (`protocol/perf.py`), USER_RINGBUF
(`protocol/user_ringbuf.py`). No syscalls: tested on hand-built bytes.

Layer: merge | protocol | kernel | bpf_files (docs/ARCHITECTURE.md).
"""
