"""Keys of the ``ringtool trace`` dashboard: terminal input bytes -> key names.

:class:`KeyParser` turns what a terminal in cbreak mode sends into key names: a
printable character is itself (``"q"``, ``">"``), and the rest are names: ``up``,
``down``, ``left``, ``right``, ``pgup``, ``pgdn``, ``home``, ``end``, ``f1``, ``f6``,
``f3``, ``f4``, ``f5``, ``f10``, ``enter``, ``esc``, ``backspace``, ``tab``, and mouse
events in SGR form (``ESC [ < b ; x ; y M``, what a terminal sends after
:data:`MOUSE_ON`): a left-button press is ``click:X:Y`` (1-based cell), the wheel is
``up``/``down``, the rest (releases, other buttons, drags) is dropped. Escape
sequences are parsed in their xterm/VT/linux-console forms (CSI ``ESC [ params
final``, SS3 ``ESC O x``, the linux console's ``ESC [ [ A``); a sequence this parser
does not name (any other function key, modifiers, Alt+key) is dropped whole, never
seen as the characters it is made of, and a control character without a name is
dropped too.

A lone ``ESC`` is only a key when nothing follows it: :meth:`KeyParser.feed` keeps an
unfinished sequence pending, and the caller waits a short time (:data:`ESC_TIMEOUT`)
for the rest before calling :meth:`KeyParser.flush`, which makes a lone ``ESC`` the
``esc`` key and drops any other unfinished sequence.
"""

from __future__ import annotations

import codecs

#: How long to wait for the rest of an escape sequence after its first bytes (s).
ESC_TIMEOUT = 0.05

#: Mouse reporting on: button presses (1000) in SGR coordinates (1006), and off.
MOUSE_ON, MOUSE_OFF = "\x1b[?1000h\x1b[?1006h", "\x1b[?1006l\x1b[?1000l"

#: CSI sequences ending in ``~``: first parameter -> key.
_TILDE = {"1": "home", "7": "home", "4": "end", "8": "end", "5": "pgup", "6": "pgdn",
          "11": "f1", "13": "f3", "14": "f4", "15": "f5", "17": "f6", "21": "f10"}  # fmt: skip
#: CSI/SS3 final characters -> key.
_FINAL = {"A": "up", "B": "down", "C": "right", "D": "left", "H": "home", "F": "end",
          "P": "f1", "R": "f3", "S": "f4"}  # fmt: skip
#: SGR mouse buttons -> key (0: left press; 64/65: the wheel).
_MOUSE = {64: "up", 65: "down"}
_CONTROL = {"\r": "enter", "\n": "enter", "\x1b": "esc", "\x7f": "backspace",
            "\b": "backspace", "\t": "tab"}  # fmt: skip


class KeyParser:
    """Incremental: bytes in (any split), key names out (see the module doc)."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._buf = ""

    @property
    def pending(self) -> bool:
        """An escape sequence has started and is not finished yet."""
        return bool(self._buf)

    def feed(self, data: bytes) -> list[str]:
        """The keys completed by ``data``; an unfinished sequence stays pending."""
        self._buf += self._utf8.decode(data)
        keys: list[str] = []
        i, buf = 0, self._buf
        while i < len(buf):
            ch = buf[i]
            if ch != "\x1b":
                i += 1
                if ch.isprintable():
                    keys.append(ch)
                elif ch in _CONTROL:
                    keys.append(_CONTROL[ch])
                continue
            end, key = _sequence(buf, i)
            if end < 0:  # unfinished: wait for more bytes
                break
            if key:
                keys.append(key)
            i = end
        self._buf = buf[i:]
        return keys

    def flush(self) -> list[str]:
        """After :data:`ESC_TIMEOUT` with nothing more: a lone ``ESC`` is the ``esc``
        key; another unfinished sequence is dropped."""
        buf, self._buf = self._buf, ""
        if not buf:
            return []
        return ["esc"] if buf == "\x1b" else []


def _sequence(buf: str, i: int) -> tuple[int, str]:
    """The escape sequence at ``buf[i]`` (an ``ESC``): ``(end, key)``, ``key`` empty
    for a sequence without a name, ``end`` -1 when it is not finished."""
    if i + 1 >= len(buf):
        return -1, ""
    kind = buf[i + 1]
    if kind == "\x1b":  # ESC ESC: the first one was the Esc key
        return i + 1, "esc"
    if kind == "O":  # SS3: ESC O <final>
        if i + 2 >= len(buf):
            return -1, ""
        return i + 3, _FINAL.get(buf[i + 2], "")
    if kind != "[":  # Alt+key: dropped
        return i + 2, ""
    if i + 2 < len(buf) and buf[i + 2] == "[":  # linux console F1..F5: ESC [ [ A..E
        if i + 3 >= len(buf):
            return -1, ""
        return i + 4, {"A": "f1", "C": "f3", "D": "f4", "E": "f5"}.get(buf[i + 3], "")
    j = i + 2
    while j < len(buf) and "\x20" <= buf[j] <= "\x3f":  # parameters, intermediates
        j += 1
    if j >= len(buf):
        return -1, ""
    final = buf[j]
    if not "\x40" <= final <= "\x7e":  # not a CSI sequence after all: drop ESC [
        return j, ""
    params = buf[i + 2 : j]
    if params.startswith("<"):
        return j + 1, _mouse(params[1:], final)
    if final == "~":
        return j + 1, _TILDE.get(params.split(";")[0], "")
    if params in ("", "1"):  # no modifier (ESC [ 1 ; 5 A is Ctrl+Up: dropped)
        return j + 1, _FINAL.get(final, "")
    return j + 1, ""


def _mouse(params: str, final: str) -> str:
    """The key of an SGR mouse report ``b;x;y`` + ``M`` (press) or ``m`` (release)."""
    parts = params.split(";")
    if final != "M" or len(parts) != 3 or not all(p.isdigit() for p in parts):
        return ""
    button, x, y = map(int, parts)
    if button == 0:
        return f"click:{x}:{y}"
    return _MOUSE.get(button, "")


__all__ = ["ESC_TIMEOUT", "MOUSE_OFF", "MOUSE_ON", "KeyParser"]
