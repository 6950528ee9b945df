"""Show data from traced processes on a terminal without letting it act on the terminal.

A file name, a comm, an argv or an interface name is chosen by whoever runs the traced
process: it may hold ANSI/OSC escape sequences (``\\x1b[2J`` clears the screen, OSC 52
writes the clipboard, OSC 8 makes links), carriage returns and backspaces that overwrite
what was already printed, bidi overrides that reorder it, or rich markup. Everything
ringtool prints for a human goes through :func:`printable` first, and the TUI passes
it to rich as :class:`rich.text.Text`, never as markup.

Contract of :func:`printable`: the result contains only characters for which
:meth:`str.isprintable` is true (so no C0/C1 control, DEL, format character such as a
bidi override, line or paragraph separator, surrogate or unassigned code point); every
other character is replaced by its Python escape (``\\x1b``, ``\\u202e``,
``\\U000e0001``). Printable text is returned unchanged (and fast: one C-level check).
Bytes that were not UTF-8 never get here as such: trace records are decoded with
``backslashreplace`` (:func:`ringtool.event.decode.cstr`), so they already read
``\\xff``. JSON output does not use this: JSON escapes control characters itself.
"""

from __future__ import annotations


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with each non-printable character written as its escape (see the
    module doc); one line, safe to write to a terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


__all__ = ["printable"]
