"""The live dashboard (`trace/dashboard/tui.py`): its view state, keys, mouse,
panels, recent records, exits, tree and cost panel.

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
