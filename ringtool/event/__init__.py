"""The trace event schema: the layout read from ``bpf/trace_event.h``
(`event/layout.py`), the fields, decoding, columns, the JSON-lines encoding and text
safety that everything above reads records through.

Layer: readers | programs | kmes | event (docs/ARCHITECTURE.md).
"""
