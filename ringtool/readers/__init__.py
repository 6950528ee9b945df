"""The public consumers of RINGBUF and PERF_EVENT_ARRAY maps and the producer of
USER_RINGBUF maps, built from the read protocols (:mod:`ringtool.protocol`) and the OS
wrappers (:mod:`ringtool.kernel`).

Layer: readers | programs | kmes | event (docs/ARCHITECTURE.md).
"""
