"""Fast path for the common mpitrace rank file: one anchored regex instead of a line loop.

Most files of a large job are one rank's profile in the exact layout mpitrace prints
(header, routine table, totals, message size distributions, nothing else). :func:`read`
checks the whole text against that layout with one ``fullmatch``, reads the totals with
the scanner's own line function and splits the rows of each table into words at once,
giving the :class:`~._mpitrace_scan.Block` that
:class:`~._mpitrace_scan.Scanner` would give, with no problems (the layout is a strict
subset of what the scanner reads without complaint). Anything else (rank 0's summary and
per-rank table, pasted or cut profiles, odd lines) returns None and takes the scanner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import repeat
from typing import Any

from . import _mpitrace_scan as scan

_SEP = r"-+\n"
_ROW4 = r"\w+ +\d+ +\d+\.\d+ +\d+\.\d+\n"
_MSG_HDR = r"\w+ +#calls +avg\. bytes +time\(sec\)\n"
_BIN = r" +\d+ +\d+\.\d+ +\d+\.\d+\n"
_PROFILE = re.compile(
    r"Data for MPI rank (\d+) of (\d+):( \(all communicators\))?\n"
    r"(Times [^\n]*)\n" + _SEP +
    r"MPI Routine +#calls +avg\. bytes +time\(sec\)\n" + _SEP +
    rf"((?:{_ROW4})*)" + _SEP +
    r"((?:[^\n-][^\n]*\n|\n)*?)" + _SEP +          # totals: no separator among them
    rf"Message size distributions:\n((?:\n|{_MSG_HDR}(?:{_BIN})*)*)",
    re.ASCII)
_SEEN = frozenset((scan.ROUTINES, scan.TOTALS, scan.MSG))


class _Numbers(dict[str, Any]):
    """``int`` or ``float`` of a word, remembered: the ranks of a job print the same calls
    and sizes, and a lookup costs a fraction of a conversion (times differ: not cached)."""

    def __init__(self, convert: Callable[[str], Any]) -> None:
        super().__init__()
        self.convert = convert

    def __missing__(self, word: str) -> Any:
        if len(self) >= 1 << 17:
            self.clear()
        self[word] = value = self.convert(word)
        return value


_INT = _Numbers(int).__getitem__
_FLOAT = _Numbers(float).__getitem__


def read(text: str) -> scan.Block | None:
    """The one profile in ``text`` when it has the plain layout, else None."""
    m = _PROFILE.fullmatch(text)
    if m is None:
        return None
    times = scan._TIMES.match(m[4].rstrip())
    if times is None:
        return None
    b = scan.Block(1, int(m[1]), int(m[2]), bool(m[3]))
    b.generation = "statistics" if times[1] else "times"
    b.region = scan._REGION.get(times[2], times[2])
    if not _totals(b, m[6]):
        return None
    t = m[5].split()
    b.routines = list(zip(t[0::4], map(_INT, t[1::4]), map(_FLOAT, t[2::4]),
                          map(float, t[3::4]), strict=True))
    _messages(b, m[7], text.count("\n", 0, m.start(7)) + 1)
    b.seen, b.state, b.underlined = set(_SEEN), scan.MSG, True
    b.last_line = _last_line(text)
    return b


def _last_line(text: str) -> int:
    """Number of the last line with words; the text ends with a newline, and blank lines
    after its last words are empty (the layout has no other whitespace at its end)."""
    end = len(text) - 1
    while end > 0 and text[end - 1] == "\n":
        end -= 1
    return text.count("\n", 0, end) + 1


def _totals(b: scan.Block, lines: str) -> bool:
    """Read the totals as the scanner does; False at a line it would not take silently."""
    for raw in lines.split("\n"):
        line = raw.strip()
        if line and not scan.read_total(b, line):
            return False
    return True


def _messages(b: scan.Block, section: str, line: int) -> None:
    """Size-bin rows under their routine headings; heading line numbers in ``msg_lines``.

    ``section`` passed the layout check: '#calls' is only in headings, and the rows under
    a heading are split into words all at once.
    """
    heads = _headings(section)
    ends = [start for _, start, _ in heads[1:]] + [len(section)] * bool(heads)
    out, lines, prev = b.messages, b.msg_lines, 0
    for (name, start, body), end in zip(heads, ends, strict=True):
        line += section.count("\n", prev, start)
        prev = start
        lines[name] = line
        w = section[body:end].split()
        out.extend(zip(repeat(name), map(_INT, w[0::3]), map(_FLOAT, w[1::3]),
                       map(float, w[2::3])))


def _headings(section: str) -> list[tuple[str, int, int]]:
    """(routine, start of its heading line, start of its first row) per heading."""
    out = []
    at = section.find("#calls")
    while at >= 0:
        start = section.rfind("\n", 0, at) + 1
        body = section.index("\n", at) + 1
        out.append((section[start:at].rstrip(), start, body))
        at = section.find("#calls", body)
    return out
