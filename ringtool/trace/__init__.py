"""``ringtool trace``: the loop (`trace/runner.py`) and its rooms: ``reading`` (what
reads the kernel: the session, the BPF trace sources ``bpf/trace_*.c`` whose one event
layout, ``bpf/trace_event.h``, :mod:`ringtool.event.layout` reads), ``report`` (the
statistics and the summary), ``writers`` (JSON lines, columns, pcapng, KMES),
``dashboard`` (the rich TUI) and ``recorder`` (``--flight-recorder``); what they share
(`trace/sink.py`, `trace/units.py`) is here. docs/ARCHITECTURE.md has a line per module.

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
