"""The sntilestat format's general route: the rows of a file, whatever its layout.

:func:`file_rows` reads the whole file at once (at the header's columns when the rows line
up under one header, else one regex scan); :func:`line_rows` reads line by line where that
finds a malformed row, an unknown column or whitespace collapsed by a copy (PDFs, docs),
joins wrapped commands and names each malformed row with its line. The fast route
(:func:`.read._quick`) declines to this one for anything but rows aligned under one
known header.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import Problem
from . import HEADER as _HEADER
from . import fast as _fixed

PCT_COLUMNS = ("idle_pct", "exec_pct", "pload_pct", "aload_pct", "chkpt_pct", "quiesce_pct")
HEADER_NAMES = ("%idle", "%exec", "%pload", "%aload", "%chkpt", "%quiesce")
_F = rb"[ \t]+(\d+(?:\.\d+)?)"
_ROW = re.compile(rb"/XRDU_(\d+)/RDU_(\d+)/TILE_(\d+)" + _F * 6 +
                  rb"(?:[ \t]+(\d+)[ \t]+(\S+)(?:[ \t]+([^\r\n]*))?)?[ \t]*(?=[\r\n]|$)")
_ANY_ROW = re.compile(rb"/XRDU_\d")
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>78]")
_CLEAR = re.compile(rb"\x1b\[[0-9;]*H|\x1b\[2J")


@dataclass
class Rows:
    """Raw fields as row tuples, or already as columns; and each row's line."""

    fields: list[tuple[bytes, ...]] = field(default_factory=list)
    lines: list[int] | np.ndarray | None = None
    columns: dict[str, Any] | None = None
    #: percentage columns of the last row's header
    npct: int = len(PCT_COLUMNS)


def file_rows(buf: bytes, lines: tuple[np.ndarray, np.ndarray, np.ndarray],
               headers: list[bytes]) -> Rows | None:
    """The rows of the whole file: aligned output read at the header's columns (numpy,
    :mod:`.fast`); else one C-level regex scan.

    None when some tile row is malformed (:func:`line_rows` then names it).
    """
    if headers and len(set(headers)) == 1:
        aligned = _fixed.read(buf, headers[0], lines)
        if aligned is not None and len(lines[0]) == buf.count(b"/XRDU_"):
            return Rows(columns=aligned[0], lines=lines[2])
    found = list(_ROW.finditer(buf))
    if len(found) != len(_ANY_ROW.findall(buf)):
        return None
    starts = np.fromiter((m.start() for m in found), dtype=np.int64, count=len(found))
    return Rows([m.groups(b"") for m in found],
                 lines=_fixed.line_numbers(np.frombuffer(buf, dtype=np.uint8), starts))


def line_rows(buf: bytes, name: str, problems: list[Problem], extra: list[str],
               headers: list[bytes]) -> Rows:
    """Line by line: join wrapped commands, name malformed rows with their line (the line
    in the file: terminal escapes are cleaned line by line, see :func:`_logical_lines`).

    Each row is read with the columns of the header above it (rows before the first header
    with those of the first one; ``headers``: the file's headers, a torn last one left
    out), so a damaged header changes only the rows under it."""
    if extra:
        problems.append(Problem(name, f"header has column(s) dptrace does not know: "
                                f"{', '.join(extra)}; their values are not kept"))
    npct, index = _layout(headers[0]) if headers else _DEFAULT_LAYOUT
    left = len(headers)  # a header past these (a torn last line) is not read
    found: list[int] = []
    out = Rows(lines=found)
    wrap_ok = False
    for lineno, line in _logical_lines(buf):
        text = line.strip()
        if not text.startswith(b"/XRDU_"):
            if left and b"%idle" in text:
                here = _HEADER.findall(text)[:left]
                if here:
                    npct, index = _layout(here[-1])
                    left -= len(here)
            if wrap_ok and _is_continuation(text):
                last = out.fields[-1]
                out.fields[-1] = last[:-1] + (last[-1] + b" " + text,)
                continue
            wrap_ok = False
            continue
        row = _split_row(text, npct, index)
        if isinstance(row, str):
            problems.append(Problem(name, f"tile row skipped: {row}", lineno, "error"))
            wrap_ok = False
            continue
        out.fields.append(row)
        found.append(lineno)
        out.npct = npct
        wrap_ok = bool(row[-1])
    return out


_HEADER_LABELS = tuple(h.encode() for h in HEADER_NAMES)
#: (number of percentage columns, where each known one is among them)
_DEFAULT_LAYOUT: tuple[int, tuple[int | None, ...]] = (len(PCT_COLUMNS), tuple(range(6)))


def _layout(header: bytes) -> tuple[int, tuple[int | None, ...]]:
    """A header's percentage columns: how many, and where each known one is (None: not
    in this header, its values are missing)."""
    names = [t for t in header.split() if t.startswith(b"%")]
    return len(names), tuple(names.index(h) if h in names else None for h in _HEADER_LABELS)


def _logical_lines(buf: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number in ``buf``, text) of each line of :func:`_clean` ``(buf)``: a cursor
    move that starts a row starts a logical line, numbered as the line that holds it."""
    for lineno, line in enumerate(buf.split(b"\n"), 1):
        if b"\x1b" not in line:
            yield lineno, line
            continue
        for piece in _CLEAR.split(line.replace(b"\x1b[H\x1b[2J", b"")):
            yield lineno, _ESCAPES.sub(b"", piece)


def _is_continuation(text: bytes) -> bool:
    return bool(text) and not text.startswith((b"TILE", b"```", b"...", b"Every", b"$", b"#"))


def _split_row(text: bytes, npct: int,
               index: tuple[int | None, ...] = _DEFAULT_LAYOUT[1]) -> tuple[bytes, ...] | str:
    m = re.match(rb"/XRDU_(\d+)/RDU_(\d+)/TILE_(\d+)(?:\s+|$)", text)
    if not m:
        return f"bad tile path {text.split()[0].decode('utf-8', 'replace')!r}"
    parts = text[m.end():].split(None, npct + 2)
    if len(parts) < npct:
        return f"{len(parts)} of {npct} percentage columns (row cut short?)"
    pct = parts[:npct]
    bad = [p for p in pct if not re.fullmatch(rb"\d+(?:\.\d+)?", p)]
    if bad:
        return f"percentage {bad[0].decode('utf-8', 'replace')!r} is not a number"
    rest = parts[npct:]
    pid = rest[0] if rest and rest[0].isdigit() else b""
    user = rest[1] if len(rest) > 1 else b""
    command = rest[2] if len(rest) > 2 else b""
    known = (pct[i] if i is not None else b"nan" for i in index)
    return (*m.groups(), *known, pid, user, command)
