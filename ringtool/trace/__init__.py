"""``ringtool trace``: BPF trace sources (bpf/trace_*.c), their one event layout
(bpf/trace_event.h, read by :mod:`ringtool.event.layout`), decoding, aggregation and
the outputs (JSON lines, columns, the rich TUI, pcapng, KMES).

Modules: ``layout`` (the single event definition), ``sources`` (loading, reading,
counters), ``net`` (TC capture), ``events`` (decoding), ``stats`` (aggregation),
``output_json`` / ``output_columns`` / ``tui`` / ``pcapng`` / ``kmes_sink`` (sinks),
``runner`` (the loop).
"""
