"""Asking an interactive bash what it completes for ``ringtool``: the shell snippet the
completion tests run (after ``bash -i`` read its startup files) and its answer."""

from __future__ import annotations

from dataclasses import dataclass

#: Prints ``spec=`` (``complete -p ringtool``; exit 3 without one), then calls the
#: completion function as bash would for ``ringtool tr<TAB>`` and prints each ``reply=``.
ASK = r"""
spec=$(complete -p ringtool) || exit 3
echo "spec=$spec"
fn=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
COMP_WORDS=(ringtool tr); COMP_CWORD=1; COMP_LINE="ringtool tr"; COMP_POINT=${#COMP_LINE}
COMPREPLY=()
"$fn" ringtool tr ringtool
for r in "${COMPREPLY[@]}"; do echo "reply=$r"; done
"""


@dataclass(frozen=True)
class Answer:
    spec: str
    replies: list[str]


def answer(stdout: str) -> Answer:
    """The ``spec=`` and ``reply=`` lines of :data:`ASK`'s output."""
    lines = stdout.splitlines()
    spec = next((x[5:] for x in lines if x.startswith("spec=")), "")
    return Answer(spec, [x[6:].strip() for x in lines if x.startswith("reply=")])
