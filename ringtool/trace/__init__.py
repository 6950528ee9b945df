"""``ringtool trace``: the BPF trace sources (``bpf/trace_*.c``, their one event
layout in ``bpf/trace_event.h``, read by :mod:`ringtool.event.layout`), the session
that reads them (`trace/session.py`), aggregation (`trace/stats.py`), the loop
(`trace/runner.py`) and its outputs and sinks (`trace/sink.py`: JSON lines, columns,
the rich TUI, pcapng, KMES). docs/ARCHITECTURE.md has a line per module.

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
