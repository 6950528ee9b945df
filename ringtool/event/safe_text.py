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
``\\xff``.

JSON text gets :func:`printable_json` instead: JSON itself escapes only the characters
below U+0020, so a C1 control, DEL or a bidi override inside a string would reach the
terminal raw; :func:`printable_json` writes each non-printable character as its JSON
``\\uXXXX`` escape (a surrogate pair beyond the BMP), so ``json.loads`` gives back the
exact string. Every JSON line ringtool prints goes through it: ``trace --json``
(:mod:`ringtool.event.json_lines`) and what ``collect --merged`` writes of other hosts'
lines (:mod:`ringtool.export.intake`).
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


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON escapes a non-BMP character as a UTF-16 surrogate pair
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


def printable_json(line: str) -> str:
    """A JSON text with each non-printable character written as its JSON escape (see
    the module doc). Outside strings JSON text is printable ASCII, so this only touches
    string contents, where ``\\uXXXX`` means the same character: the result parses to
    the same value and holds only printable characters."""
    if line.isprintable():
        return line
    return "".join(ch if ch.isprintable() else _json_escape(ch) for ch in line)


__all__ = ["printable", "printable_json"]
