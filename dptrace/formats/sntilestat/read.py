"""SambaNova ``sntilestat``: tile utilisation, one snapshot or a ``watch`` capture of many.

Fills ``tiles`` (see :mod:`dptrace.schema`). Real lines (``tests/fixtures/sntilestat``)::

    TILE                 %idle %exec %pload %aload %chkpt %quiesce    PID     USER COMMAND
    /XRDU_0/RDU_0/TILE_0   8.0  91.6    0.3    0.1    0.0      0.0 2750333  vsastry /opt/sambaflow/apps/nlp/transformers_on_rdu/venv/b
    /XRDU_0/RDU_1/TILE_0 100.0   0.0    0.0    0.0    0.0      0.0

Quirks handled: idle tiles end after ``%quiesce``; COMMAND is cut at a fixed width; copies
from PDFs collapse the whitespace and wrap COMMAND onto continuation lines; excerpts lack
the header or hold a literal ``...``; ``watch sntilestat`` adds ``Every 2.0s: sntilestat
host: date`` headers and, captured with ``script``, terminal escape codes.

Fast route (``engine="fast"``, and ``"auto"``; :func:`_quick`; aligned output under one
header): numpy finds the row lines and reads their fixed-width fields block by block
(:mod:`.fast`); the header, ``watch`` stamp and elision searches look only at the lines
between the rows (:mod:`.gaps`). Otherwise, the general route (``engine="general"``,
:mod:`.general`): the same searches run over the whole buffer, rows come from the aligned
reader or one literal-led regex ``findall``; snapshots are numbered where the tile order
starts again. Files with collapsed whitespace or malformed rows take a line loop that can
join wrapped commands and name the bad lines.

Damage (issue 12), checked once per file after either route: a listing whose lines end
with a lone CR (old Mac, some serial captures) has those CRs read as line breaks (and line
numbers count them); a PID or tile number beyond Int64 (a percentage beyond float64)
becomes missing; a last row cut by the end of the file (no final newline) loses the field it
was cut in, and a header cut there is not read (it would change the layout of the rows
before it); holes of NUL bytes are named.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ... import schema
from ...errors import Problem
from ...registry import ParseResult
from ...sources import HEAD_BYTES, Source
from .. import trainlog as _trainlog
from . import HEADER as _HEADER
from . import columns as _cols
from . import fast as _fixed
from . import gaps as _scan
from . import general
from .general import _CLEAR, _ESCAPES, HEADER_NAMES, PCT_COLUMNS, Rows
from .tables import TILES

_WATCH = re.compile(rb"Every\s+[\d.]+s:[^\r\n]*?\s(\S+):\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+)"
                    rb"(?:\s+[A-Z]{2,5})?\s+(\d{4})")


def parse(source: Source, *, engine: str = "auto") -> ParseResult:
    """Parse one file of sntilestat output into ``tiles``.

    ``engine``: "fast" (and "auto") first tries :func:`_quick`: rows aligned under one
    header read at the header's columns, block by block (:mod:`.fast`), every search
    confined to the lines between the rows (:mod:`.gaps`); it declines to the general route
    for anything else. "general" is that route alone (:mod:`.general`): the rows of the
    whole file at once (:func:`.general.file_rows`), line by line where that finds a
    malformed row, an unknown column or collapsed whitespace (:func:`.general.line_rows`)."""
    general_only = engine == "general"
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        buf = bytes(raw) if not isinstance(raw, bytes) else raw
    buf = _lone_cr_lines(buf, source.name, problems)
    torn = _torn_headers(buf)
    if torn:
        problems.append(Problem(source.name, "file does not end with a newline (listing cut "
                                "short?): its last line, a column header, was not read",
                                buf.count(b"\n") + 1))
    lines = _fixed.row_lines(np.frombuffer(buf, dtype=np.uint8), b"/XRDU_")
    quick = None if general_only else _quick(buf, lines, source.name, problems)
    if quick is not None:
        return quick
    headers = _HEADER.findall(buf)
    headers = headers[:len(headers) - torn]
    extra = _unknown_columns(headers)
    collapsed = any(b"  " not in h for h in headers)
    fast = None if (extra or collapsed) else general.file_rows(buf, lines, headers)
    stamps = _WATCH.findall(buf)
    variant = "watch capture" if stamps else "snapshot"
    original = buf
    if fast is None:  # terminal escapes matter only here: rows follow newlines in watch output
        rows = general.line_rows(buf, source.name, problems, extra, headers)
        buf = _clean(buf)
        variant += ", collapsed whitespace" if collapsed else ""
    else:
        rows = fast
    df = _frame(rows, stamps, source.name, problems)
    _cut_last_row(original, df, source.name, problems, rows.npct)
    _note_elisions(buf, source.name, problems)
    _note_holes(original, df, source.name, problems)
    return ParseResult({"tiles": schema.conform(df, TILES)}, problems, variant)


def _quick(buf: bytes, lines: tuple[np.ndarray, np.ndarray, np.ndarray], name: str,
           problems: list[Problem]) -> ParseResult | None:
    """The aligned reader with every search confined to the lines between the tile rows
    (``lines``: :func:`.fast.row_lines` of ``buf``: starts, ends, numbers),
    a header cut by the end of the file left out (:func:`_torn_headers`).

    Gives what :func:`parse`'s general route gives, or None when that route is needed: the
    rows do not line up under one known header, or a row holds a searched word.
    """
    if not len(lines[0]):
        return None
    gaps = _scan.Gaps.between(buf, lines[0], lines[1])
    found_headers = _HEADER.findall(gaps.text)
    headers = set(found_headers[:len(found_headers) - _torn_headers(buf)])
    if len(headers) != 1 or _unknown_columns(list(headers)) or b"  " not in min(headers) \
            or b"/XRDU_" in gaps.text:
        return None
    found = _fixed.read(buf, headers.pop(), lines)
    if found is None or not _scan.tails_clean(found[1]):
        return None
    stamps = _scan.findall_at(_WATCH, buf, gaps.positions(b"Every"))
    df = _frame(Rows(columns=found[0], lines=lines[2]), stamps, name, problems)
    _cut_last_row(buf, df, name, problems, 6)
    if b"..." in gaps.text:
        _note_elisions(buf, name, problems)
    _note_holes(buf, df, name, problems)
    variant = "watch capture" if stamps else "snapshot"
    return ParseResult({"tiles": schema.conform(df, TILES)}, problems, variant)


def _torn_headers(buf: bytes) -> int:
    """How many headers the last line holds when the file does not end with a newline (a
    listing cut short, often inside the header of the next ``watch`` screen). A cut header
    may have lost columns or end in a piece of a label (``%ch``); it has no rows under it,
    so it is not read (the rows before it keep the layout of the whole headers; the parser
    warns about it, naming its line)."""
    last = buf.rfind(b"\n") + 1
    if buf.endswith(b"\n") or buf.find(b"%idle", last) < 0:
        return 0
    return len(_HEADER.findall(buf, last))


def _clean(buf: bytes) -> bytes:
    """Terminal captures: escapes go; cursor moves that start a row become line breaks."""
    if b"\x1b" not in buf:
        return buf
    buf = buf.replace(b"\x1b[H\x1b[2J", b"")  # watch's clear-screen (keeps line numbers)
    if b"\x1b" not in buf:
        return buf
    return _ESCAPES.sub(b"", _CLEAR.sub(b"\n", buf))


def _unknown_columns(headers: list[bytes]) -> list[str]:
    names: set[str] = set()
    for h in set(headers):
        names.update(t.decode("ascii", "replace") for t in h.split() if t.startswith(b"%"))
    return sorted(names - set(HEADER_NAMES))


def _frame(rows: Rows, stamps: list[tuple[bytes, ...]], name: str, problems: list[Problem],
           ) -> pd.DataFrame:
    """The ``tiles`` frame, every column already in its schema dtype; a PID or tile number
    beyond Int64 is missing, with a problem naming its line."""
    if rows.columns is not None:
        data = dict(rows.columns)
    elif rows.fields:
        data = _from_tuples(rows.fields)
    else:
        return TILES.empty()
    n = len(data["pid"])
    if data.get("too_big") and rows.lines is not None:
        _note_too_big(data["too_big"], np.asarray(rows.lines), name, problems)
    tile = {k: data[k] if isinstance(data[k], pd.arrays.IntegerArray) else _cols.ints(data[k])
            for k in ("xrdu", "rdu", "tile")}
    snapshot = _snapshots(*tile.values())
    time, host = _times(snapshot, stamps)
    lineno = np.asarray(rows.lines if rows.lines is not None else np.zeros(n), dtype=np.int64)
    return pd.DataFrame({
        "source": _cols.repeated(name, n), "snapshot": _cols.ints(snapshot),
        "time": time, "host": host,
        **tile,
        **{k: data[k] for k in PCT_COLUMNS},
        "pid": data["pid"], "user": data["user"], "command": data["command"],
        "lineno": pd.arrays.IntegerArray(lineno, np.full(n, rows.lines is None)),
    })


def _from_tuples(fields: list[tuple[bytes, ...]]) -> dict[str, Any]:
    cols = list(zip(*fields, strict=True))
    data: dict[str, Any] = {}
    too_big: list[tuple[int, str, bytes]] = []
    for key, label, col in (("xrdu", "XRDU", cols[0]), ("rdu", "RDU", cols[1]),
                            ("tile", "TILE", cols[2]), ("pid", "PID", cols[9])):
        data[key], big = _nullable_ints(col)
        too_big += [(row, label, text) for row, text in big]
    for key, label, col in zip(PCT_COLUMNS, HEADER_NAMES, cols[3:9], strict=True):
        data[key] = np.array(col).astype("float64")
        inf = np.flatnonzero(np.isinf(data[key]))  # over 308 digits
        data[key][inf] = np.nan
        too_big += [(int(row), label, col[row]) for row in inf.tolist()]
    too_big.sort(key=lambda t: t[0])  # stable: a row's numbers in column order
    return {
        **data, "too_big": too_big,
        "user": _texts(cols[10]),
        "command": _texts(cols[11]),
    }


def _nullable_ints(col: tuple[bytes, ...]) -> tuple[pd.arrays.IntegerArray,
                                                     list[tuple[int, bytes]]]:
    """PIDs or tile numbers (digits, or empty for an idle tile's PID) and the (row, text)
    of those beyond Int64."""
    arr = np.array(col)
    missing = arr == b""
    long = np.flatnonzero(np.char.str_len(arr) > 18)  # numpy would fail on them: checked
    too_big = []
    for i in long.tolist():
        text = bytes(arr[i])
        if _fixed.pid_fits(text):   # zero-padded: its digits (a 5,000-char one is past int())
            arr[i] = text.lstrip(b"0") or b"0"
        else:
            too_big.append((int(i), text))
    for i, _ in too_big:
        missing[i] = True
    arr[missing] = b"0"
    return pd.arrays.IntegerArray(arr.astype("int64"), missing), too_big


def _note_too_big(too_big: list[tuple[int, str, bytes]], lines: np.ndarray, name: str,
                  problems: list[Problem]) -> None:
    """One error per number (row, column label, text) beyond Int64 (a percentage: beyond
    float64), up to MAX_NOTED."""
    for row, label, text in too_big[:MAX_NOTED]:
        kind = "float (infinite)" if label.startswith("%") else "integer"
        shown = text[:24].decode() + ("..." if len(text) > 24 else "")
        problems.append(Problem(name, f"{label} {shown} does not fit a 64-bit {kind}: "
                                f"the row is kept, its {label} is missing", int(lines[row]),
                                "error"))
    if len(too_big) > MAX_NOTED:
        rest = lines[[r for r, _, _ in too_big[MAX_NOTED:]]]
        what = {label for _, label, _ in too_big[MAX_NOTED:]}
        kind = "PIDs" if what == {"PID"} else "numbers"
        problems.append(Problem(name, f"{len(rest)} more {kind} beyond a 64-bit integer (lines "
                                f"{rest.min()}-{rest.max()}): the rows are kept, those "
                                f"{kind} are missing", int(rest.min()), "error"))


#: problems of one kind named one by one in a file; the rest are counted in one more
MAX_NOTED = 10
#: a lone CR that starts a tile row or the header, on the first line (as LF counts lines):
#: the file ends its lines with CRs only
_CR_LINES = re.compile(rb"\r[ \t]*(?:/XRDU_|TILE[ \t]+%idle)")
_LONE_CR = re.compile(rb"\r(?!\n)")


def _lone_cr_lines(buf: bytes, name: str, problems: list[Problem]) -> bytes:
    """A listing whose lines end with a lone CR (old Mac line endings, some serial console
    captures) has one line as LF counts them: its lone CRs become line breaks. Told from
    its first line (up to the first LF), so other files pay one ``find``."""
    first = buf.find(b"\n")
    if not _CR_LINES.search(buf, 0, first if first >= 0 else len(buf)):
        return buf
    problems.append(Problem(name, "lines end with a lone CR (old Mac line endings): read as "
                            "line breaks, and line numbers count them"))
    return _LONE_CR.sub(b"\n", buf)


def _cut_last_row(buf: bytes, df: pd.DataFrame, name: str, problems: list[Problem],
                  npct: int) -> None:
    """A file that does not end with a newline (a listing cut short) whose last line is a
    tile row: the field that touches the end of the file may be cut (PID 2750333 -> 275),
    so it becomes missing with an error; a percentage with its one decimal is whole, and a
    command is cut by sntilestat anyway (both: a warning). Once per file."""
    if df.empty or buf.endswith(b"\n"):
        return
    raw = buf[buf.rfind(b"\n") + 1:]
    text = _ESCAPES.sub(b"", raw) if b"\x1b" in raw else raw
    fields = text.split()
    if not fields or not fields[0].startswith(b"/XRDU_"):
        return
    line = buf.count(b"\n") + 1
    if df["lineno"].iloc[-1] != line:
        return  # the row was skipped as malformed, with its own problem
    head = "file does not end with a newline (listing cut short?):"
    last, cut = df.index[-1], fields[-1]
    if text[-1:] in b" \t\r" or len(fields) > npct + 3:
        problems.append(Problem(name, f"{head} its last row was read as it is (its COMMAND "
                                "may be cut short)", line))
        return
    if len(fields) == npct + 1:
        if npct != len(PCT_COLUMNS) or re.fullmatch(rb"\d+\.\d", cut):
            problems.append(Problem(name, f"{head} its last row was read as it is", line))
            return
        column, label = PCT_COLUMNS[-1], "%quiesce"
    elif len(fields) == npct + 2:
        column, label = "pid", "PID"
    elif len(fields) == npct + 3:
        column, label = "user", "USER"
    else:
        return
    df.loc[last, column] = np.nan if column in PCT_COLUMNS else None
    problems.append(Problem(
        name, f"{head} the last row's {label} {cut.decode('utf-8', 'replace')!r} touches the "
        f"end of the file and may be cut short: the row is kept, its {label} is missing",
        line, "error"))


_NULS = re.compile(rb"\0+")


def _note_holes(buf: bytes, df: pd.DataFrame, name: str, problems: list[Problem]) -> None:
    """Name the holes of NUL bytes (data lost in a crash, or zeros a file system padded the
    file with), one per line that holds NULs. A row they touch is not a tile row (it was
    skipped with its own problem); the rows around them are read. In a page that the
    training-log reader also reads (its keywords in the head, as its sniffer looks), only the
    holes from the line before the first tile row to the line after the last are named
    here: that reader names the others, so a hole is not listed twice."""
    if b"\0" not in buf:  # one memchr pass
        return
    runs = [(m.start(), m.end() - m.start()) for m in _NULS.finditer(buf)]
    lines = _fixed.line_numbers(np.frombuffer(buf, dtype=np.uint8),
                                np.asarray([a for a, _ in runs], dtype=np.int64))
    if len(df) and _trainlog.SCAN.search(buf[:HEAD_BYTES]):
        inside = (lines >= df["lineno"].min() - 1) & (lines <= df["lineno"].max() + 1)
        lines, runs = lines[inside], [r for r, ok in zip(runs, inside, strict=True) if ok]
        if not runs:
            return
    first = np.r_[True, np.diff(lines) > 0]
    nuls = np.add.reduceat(np.asarray([n for _, n in runs]), np.flatnonzero(first))
    where = lines[first]
    for line, count in zip(where[:MAX_NOTED].tolist(), nuls[:MAX_NOTED].tolist(), strict=True):
        problems.append(Problem(name, f"{count:,} NUL byte(s) on this line: a hole in the file "
                                "(data lost: a node crashed while writing, or the file system "
                                "padded the file with zeros); the rows around it were read",
                                line, "error"))
    if len(where) > MAX_NOTED:
        problems.append(Problem(name, f"{len(where) - MAX_NOTED} more lines with NUL bytes "
                                f"(lines {where[MAX_NOTED]}-{where[-1]})", int(where[MAX_NOTED]),
                                "error"))


def _texts(col: tuple[bytes, ...]) -> pd.arrays.ArrowStringArray:
    """Decode each distinct value once (users and commands repeat on every row)."""
    codes, uniques = pd.factorize(pd.Series(col, dtype="object"))
    values = [u.decode("utf-8", "replace").rstrip() or None for u in uniques]
    return _cols.labels(values, codes)


def _snapshots(xrdu: pd.arrays.IntegerArray, rdu: pd.arrays.IntegerArray,
               tile: pd.arrays.IntegerArray) -> np.ndarray:
    """A new snapshot starts wherever the tile order does not increase. A row missing a
    tile number (beyond Int64) stays in the snapshot of the row before it, and the next
    row is compared with the last whole one."""
    missing = xrdu.isna() | rdu.isna() | tile.isna()
    x, y, z = (a.to_numpy(dtype=np.int64, na_value=0) for a in (xrdu, rdu, tile))
    if missing.any():
        whole = np.flatnonzero(~missing)
        restart = np.zeros(len(x), dtype=bool)
        restart[whole] = _restarts(x[whole], y[whole], z[whole])
        return np.cumsum(restart)
    return np.cumsum(_restarts(x, y, z))


def _restarts(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Whether each (x, y, z) is not after the one before it (the first row: False)."""
    if x.max(initial=0) < 1000 and y.max(initial=0) < 1000 and z.max(initial=0) < 1000:
        order = (x * 1000 + y) * 1000 + z  # every real listing: one comparison
        return np.r_[False, np.diff(order) <= 0]
    dx, dy, dz = np.diff(x), np.diff(y), np.diff(z)
    after = (dx > 0) | ((dx == 0) & ((dy > 0) | ((dy == 0) & (dz > 0))))
    return np.r_[False, ~after]


def _times(snapshot: np.ndarray, stamps: list[tuple[bytes, ...]]
           ) -> tuple[np.ndarray, pd.arrays.ArrowStringArray]:
    """Times and hosts from ``watch`` headers, matched to snapshots in order."""
    n = len(snapshot)
    time = np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")
    if not stamps:
        return time, _cols.labels([], np.full(n, -1))
    hosts = [h.decode("utf-8", "replace") for h, _, _ in stamps]
    texts = [" ".join(t.decode().split()) + " " + y.decode() for _, t, y in stamps]
    times = pd.to_datetime(texts, format="%a %b %d %H:%M:%S %Y", errors="coerce")
    k = min(int(snapshot.max()) + 1, len(stamps))
    # a capture can start or end mid-screen; when counts differ, align from the start
    valid = snapshot < k
    time[valid] = np.asarray(times[:k]).astype("datetime64[ns]")[snapshot[valid]]
    return time, _cols.labels(hosts[:k], np.where(valid, snapshot, -1))


def _note_elisions(buf: bytes, name: str, problems: list[Problem]) -> None:
    if b"..." not in buf:
        return
    for m in re.finditer(rb"\n[ \t]*\.\.\.[ \t]*\r?(?=\n|$)", buf):
        if b"/XRDU_" not in buf[buf.rfind(b"\n", 0, m.start()) + 1:m.start()]:
            continue  # an elision in some other listing
        line = buf.count(b"\n", 0, m.start()) + 2
        problems.append(Problem(name, "the listing elides rows here ('...'): tiles after it "
                                "are missing from the table", line))
