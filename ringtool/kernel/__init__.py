"""Thin wrappers over Linux system calls. Only this package imports ctypes
(pyproject.toml's import-linter contract "ctypes: only ringtool.kernel imports it").

Each wrapper raises a specific :mod:`ringtool.errors` exception that says what failed
and what to do about it.

Layer: merge | protocol | kernel | bpf_files (docs/ARCHITECTURE.md).
"""
