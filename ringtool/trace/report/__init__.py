"""What a trace's records add up to: the statistics (`trace/report/stats.py`),
latency histograms, process names and tree, and the summary at the end.

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
