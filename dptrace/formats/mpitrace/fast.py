"""Fast path for the common mpitrace rank file: one anchored regex instead of a line loop.

Most files of a large job are one rank's profile in the exact layout mpitrace prints
(header, routine table, totals, message size distributions, nothing else). :func:`read`
checks the whole text against that layout with one ``fullmatch``, reads the totals with
the scanner's own line function and splits the rows of each table into words at once,
giving the :class:`~.general.Block` that
:class:`~.general.Scanner` would give, with no problems (the layout is a strict
subset of what the scanner reads without complaint). Anything else (rank 0's summary and
per-rank table, pasted or cut profiles, odd lines) returns None and takes the scanner.

:class:`Plain` goes further for many files with the usual totals: it keeps each file's
pieces and converts the numbers of all of them at once (:meth:`Plain.columns`), marking
the files the scanner's checks would report on, which then take the per-file path.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import general as scan

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
#: a number of 19 characters or more: up to 18 digits (and a '.') every value fits its
#: column (int64, a finite float, an average with a size bin) and no product calls x avg
#: overflows; a longer one may not, and the scanner checks and reports each value
_LONG_NUMBER = re.compile(r"[\d.]{19}")


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
    if m is None or len(m[1]) > 18 or len(m[2]) > 18 or _LONG_NUMBER.search(m[5]) or \
            _LONG_NUMBER.search(m[7]):
        return None
    times = scan._TIMES.match(m[4].rstrip())
    if times is None:
        return None
    b = scan.Block(1, int(m[1]), int(m[2]), bool(m[3]))
    b.generation = "statistics" if times[1] else "times"
    b.region = scan._REGION.get(times[2], times[2])
    if not _totals(b, m[6]) or b.unfit:
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


# -- many plain files at once --------------------------------------------------------------
# Possessive repeats (Python 3.11+) where what follows cannot continue the repeat: the same
# matches, found about a third faster (no backtracking state kept)
_Q = "+" if sys.version_info >= (3, 11) else ""
_N, _F, _S = rf"\d+{_Q}", rf"\d+{_Q}\.\d+{_Q}", f" +{_Q}"
_NUMBERS = rf"{_S}{_N}{_S}{_F}{_S}{_F}\n"      # the last three columns of a table row
# The usual totals in mpitrace's order (role lines first): a strict subset of what the
# scanner's read_total takes, giving the same numbers (the words _TOTAL and _MEM capture).
_TOTALS = (
    r"((?:MPI task \d+ of \d+ had the (?:minimum|median|maximum) communication time\.\n)*)"
    rf"total communication time{_S}={_S}({_F}) seconds\.\n"
    rf"total elapsed time{_S}={_S}({_F}) seconds\.\n"
    rf"user cpu time{_S}={_S}({_F}) seconds\.\n"
    rf"system time{_S}={_S}({_F}) seconds\.\n"
    rf"max resident set size{_S}={_S}({_F}) (MiB|MBytes)\.\n\n*")
#: one plain rank file: header, routine table, the usual totals, size distributions (the
#: layout of _PROFILE, with these totals)
_PLAIN = re.compile(
    r"Data for MPI rank (\d+) of (\d+):( \(all communicators\))?\n(Times [^\n]*)\n" + _SEP +
    r"MPI Routine +#calls +avg\. bytes +time\(sec\)\n" + _SEP +
    rf"((?:\w+{_Q}{_NUMBERS})*{_Q})" + _SEP + _TOTALS + _SEP +
    rf"Message size distributions:(\n(?:\n|{_MSG_HDR}(?:{_NUMBERS})*{_Q})*{_Q})",
    re.ASCII)
#: _PLAIN over a file's bytes (ASCII: the same matches, no decoded copy of the text)
_PLAIN_BYTES = re.compile(_PLAIN.pattern.encode("ascii"))
_ROLE_WORD = re.compile(r"the (\w+) communication")
#: a size-bin heading, with the newline that ends the line before it (splits the sections)
_HEADING = re.compile(rb"\n(\w+) +#calls +avg\. bytes +time\(sec\)")
#: the largest count or size converted exactly and summed exactly in float64
EXACT = float(1 << 53)


class Plain:
    """Plain rank files taken whole (header, routine table, the usual totals, size
    distributions; ASCII), their numbers converted for all files at once by :meth:`columns`.

    :meth:`take` declines anything else, and rank 0 (whose profile would lack its summary).
    """

    def __init__(self) -> None:
        #: per file: the groups of _PLAIN (bytes), (generation, region)
        self.groups: list[tuple[Any, ...]] = []
        self.times: list[tuple[str, str]] = []

    def __len__(self) -> int:
        return len(self.groups)

    def take(self, data: bytes, rank: int | None = None) -> bool:
        """Add one file's content when it has the plain layout (and is for ``rank``, when
        given); False, adding nothing, otherwise."""
        m = _PLAIN_BYTES.fullmatch(data) if data.isascii() else None
        times = _TIMES[m[4].decode("ascii")] if m else None
        if m is None or times is None or len(m[1]) > 18 or len(m[2]) > 18:
            return False
        r, n = int(m[1]), int(m[2])
        if r == 0 or (rank is not None and r != rank) or max(r, n) >= EXACT:
            return False
        self.groups.append(m.groups())
        self.times.append(times)
        return True

    def columns(self) -> PlainColumns:
        """Every file's numbers, converted at once; ``suspect`` marks the files the scanner's
        checks (:func:`~.general.check_block`) would say something about."""
        nfiles = len(self)
        (rank, nranks, all_comms, _, routine_text, roles, comm, elapsed, user, system, rss,
         unit, message_text) = zip(*self.groups, strict=True)
        # the routine names as text; the numbers' words stay bytes (Arrow reads either)
        words = b"".join(routine_text).decode("ascii").split()
        names = words[0::4]
        del words[0::4]
        routine = _floats(words).reshape(-1, 3)
        routine_rows = np.fromiter(map(bytes.count, routine_text, repeat(b"\n")), np.intp,
                                   nfiles)
        # the sections passed _PLAIN: '#' is only in headings, three words a bin row
        split = _HEADING.split(b"".join(message_text))
        # each body's words (three a row): its rows without a count of its bytes
        words_of = list(map(bytes.split, split[2::2]))
        nwords = np.fromiter(map(len, words_of), np.intp, len(words_of))
        bin_rows = nwords // 3
        message = _floats(list(chain.from_iterable(words_of))).reshape(-1, 3)
        del words_of
        heading_file = np.repeat(np.arange(nfiles), np.fromiter(
            map(bytes.count, message_text, repeat(b"#")), np.intp, nfiles))
        if len(names) != len(routine) or bin_rows.sum() != len(message) or \
                len(heading_file) != len(nwords) or routine_rows.sum() != len(routine) or \
                (nwords % 3).any():
            raise ValueError("plain mpitrace files split unexpectedly")
        # the five totals of every file converted at once, as the other numbers
        totals = _floats([*comm, *elapsed, *user, *system, *rss]).reshape(5, nfiles).T.copy()
        units = [u.decode("ascii") for u in unit]
        totals[:, 4] *= [scan._UNIT_MIB[u] for u in units]
        cols = PlainColumns(
            # ranks below 2**53 (take): exact as float64
            rank=np.array(list(map(int, rank)), dtype=np.float64),
            nranks=np.array(list(map(int, nranks)), dtype=np.float64),
            all_comms=[bool(a) for a in all_comms], times=self.times, unit=units,
            roles=[("+".join(_ROLE_WORD.findall(r.decode("ascii"))) or None) if r else None
                   for r in roles],
            totals=totals, routine_rows=routine_rows, routine_name=names, routine=routine,
            heading_name=[h.decode("ascii") for h in split[1::2]],
            heading_file=heading_file, bin_rows=bin_rows,
            message=message,
            message_rows=np.bincount(heading_file, bin_rows, minlength=nfiles).astype(np.intp),
            suspect=np.zeros(nfiles, dtype=bool))
        _check(cols)
        return cols


def _floats(words: list[str] | list[bytes]) -> np.ndarray:
    """The numbers ``words`` (text or ASCII bytes, digits and a '.': the layout's) as
    float64, converted in Arrow: 2.5x faster than numpy's text reader or ``float`` (a
    correctly rounded parse, like ``float``: the same values). Words Arrow does not take go
    through ``float``."""
    pool = pa.system_memory_pool()   # the C heap, as numpy's: freed, reused by either
    kind = pa.binary() if words and type(words[0]) is bytes else pa.string()
    try:
        return pc.cast(pa.array(words, kind, memory_pool=pool), pa.float64(),
                       memory_pool=pool).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return np.array(list(map(float, words)), dtype=np.float64)


@dataclass
class PlainColumns:
    """:meth:`Plain.columns`: per file, per routine row, per size-bin heading and row."""

    rank: np.ndarray
    nranks: np.ndarray
    all_comms: list[bool]
    times: list[tuple[str, str]]
    unit: list[str]
    roles: list[str | None]
    #: comm, elapsed, user, system time (s) and max RSS (MiB) per file
    totals: np.ndarray
    routine_rows: np.ndarray
    routine_name: list[str]
    #: calls, avg bytes, time (s) per routine row
    routine: np.ndarray
    heading_name: list[str]
    heading_file: np.ndarray
    bin_rows: np.ndarray
    #: calls, avg bytes, time (s) per size-bin row
    message: np.ndarray
    message_rows: np.ndarray
    suspect: np.ndarray


def _check(c: PlainColumns) -> None:
    """Mark the files :func:`~.general.check_block` would report on (bins missing or
    not adding up to the routine's calls), those with a routine listed twice, and those with
    numbers too large to be summed exactly or too long for a float (the scanner reports
    them); the others get no problem from it."""
    nfiles = len(c.rank)
    codes, uniques = pd.factorize(np.array(c.routine_name + c.heading_name, dtype=object))
    width = max(len(uniques), 1)
    nr = len(c.routine_name)
    routine_file = np.repeat(np.arange(nfiles), c.routine_rows)
    routine_key = routine_file * width + codes[:nr]
    heading_key = c.heading_file * width + codes[nr:]
    for keys, file in ((routine_key, routine_file), (heading_key, c.heading_file)):
        order = np.argsort(keys, kind="stable")
        twice = keys[order][1:] == keys[order][:-1]
        c.suspect[file[order][1:][twice]] = True
    filled = c.bin_rows > 0
    starts = np.cumsum(c.bin_rows) - c.bin_rows
    sums = np.add.reduceat(c.message[:, 0], starts[filled]) if filled.any() else np.zeros(0)
    c.suspect[c.heading_file[filled][sums >= EXACT]] = True
    keys = heading_key[filled]
    order = np.argsort(keys)
    keys, sums = keys[order], sums[order]
    at = np.minimum(np.searchsorted(keys, routine_key), max(len(keys) - 1, 0))
    found = keys[at] == routine_key if len(keys) else np.zeros(nr, dtype=bool)
    calls, avg = c.routine[:, 0], c.routine[:, 1]
    bad = (found & (sums[at] != calls) if len(keys) else found) | (~found & (avg > 0))
    bad |= calls >= EXACT
    # a time or total too long for a float (the layout has digits only: no nan, no inf)
    bad |= ~np.isfinite(c.routine[:, 2])
    c.suspect[routine_file[bad]] = True
    c.suspect[np.repeat(c.heading_file, c.bin_rows)[
        (c.message[:, 1] >= EXACT) | ~np.isfinite(c.message[:, 2])]] = True
    c.suspect[~np.isfinite(c.totals).all(axis=1)] = True


class _TimesLines(dict[str, "tuple[str, str] | None"]):
    """(generation, region) of a 'Times ...' line as :func:`read` reads it, or None; the
    ranks of a job share one line."""

    def __missing__(self, line: str) -> tuple[str, str] | None:
        if len(self) >= 1 << 10:
            self.clear()
        m = scan._TIMES.match(line.rstrip())
        self[line] = got = None if m is None else (
            "statistics" if m[1] else "times", scan._REGION.get(m[2], m[2]))
        return got


_TIMES = _TimesLines()
