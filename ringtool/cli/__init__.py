"""The ``ringtool`` command line: argument parsing and the one-line error handling of
every subcommand (`cli/main.py`).

Layer: cli (docs/ARCHITECTURE.md).
"""
