"""Vectorised reading of sntilestat's aligned output: numpy slices at the header's columns.

sntilestat right-aligns every column under its header label and pads the tile path to the
``TILE`` column, so each field sits at a fixed byte range of its row. This module finds the
rows with numpy, gathers the fixed part of a block of rows into a small byte matrix (one
that stays in the CPU cache), checks the layout and converts the decimal columns by digit
arithmetic. The owner tails (PID USER COMMAND) repeat from snapshot to snapshot: they are
grouped by a hash of their bytes and each distinct tail is split once. Any row that does
not line up makes :func:`read` return None; the caller then reads the file with the per-row
regex instead.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from .columns import first_codes, strings

#: right-aligned under their labels; PID and USER are not (a 7-digit PID overflows "PID")
_NUMERIC = (b"%idle", b"%exec", b"%pload", b"%aload", b"%chkpt", b"%quiesce")
_PCT = ("idle_pct", "exec_pct", "pload_pct", "aload_pct", "chkpt_pct", "quiesce_pct")
_MAX_ROW = 512
#: width of '/XRDU_x/RDU_y/TILE_z' (one-digit numbers); other widths take the regex path
_PATH = 20
#: rows per block: a block's byte matrix (and its temporaries) fits in the CPU cache
_BLOCK = 16384
_DIGITS = (6, 12, 19)  # x, y, z in /XRDU_x/RDU_y/TILE_z
_RDU = np.frombuffer(b"/RDU_", np.uint8)
_TILE = np.frombuffer(b"/TILE_", np.uint8)
#: _KEEP[k] keeps the first k bytes of a little-endian 8-byte word
_KEEP = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=np.uint64)
_PRIME = np.uint64(1099511628211)


def layout(header: bytes) -> list[tuple[int, int]] | None:
    """(start, end) byte ranges of %idle ... %quiesce within a row, from the header's label ends."""
    if header.find(b"TILE") != 0:
        return None
    spans, prev = [], _PATH  # the path fills the TILE column; %idle starts right after it
    for label in _NUMERIC:
        pos = header.find(label, prev)
        if pos < 0:
            return None
        end = pos + len(label)
        spans.append((prev, end))
        prev = end
    return spans


def read(buf: bytes, header: bytes, lines: tuple[np.ndarray, ...]
         ) -> tuple[dict[str, object], list[bytes]] | None:
    """Columns xrdu, rdu, tile, the six *_pct, pid, user, command, and the distinct owner
    tails; None if not aligned. ``lines``: :func:`row_lines` of ``buf``."""
    spans = layout(header.rstrip(b"\r"))
    starts, ends = lines[0], lines[1]
    if spans is None or not len(starts):
        return None
    numeric_end = spans[5][1]
    if (ends - starts > _MAX_ROW).any() or (starts + numeric_end > ends).any():
        return None
    arr = np.frombuffer(buf, dtype=np.uint8)
    blocks = _blocks(arr, starts, ends - starts - numeric_end, spans)
    if blocks is None:
        return None
    data, digest = blocks
    try:
        tails = _owner(data, buf, digest, starts + numeric_end, ends)
    except ValueError:  # a PID that is not a number
        return None
    return data, tails


def _blocks(arr: np.ndarray, starts: np.ndarray, tail_lengths: np.ndarray,
            spans: list[tuple[int, int]]) -> tuple[dict[str, object], np.ndarray] | None:
    """Tile numbers, percentages and a hash of each owner tail, block by block.

    Each block's rows are gathered once, up to the longest tail, into a byte matrix that
    fits in the CPU cache. None when a block does not line up or a number does not parse.
    """
    numeric_end = spans[5][1]
    width = numeric_end + 8 * -(-max(int(tail_lengths.max()), 1) // 8)
    step = max(_BLOCK * 64 // width, 256)
    parts: list[list[np.ndarray]] = []
    for lo in range(0, len(starts), step):
        rows = _gather(arr, starts[lo:lo + step], width)
        if not _aligned(rows[:, :numeric_end + 1], spans):
            return None
        try:
            numbers = _numbers(rows, spans)
        except ValueError:  # a field that is not a number where the header says one is
            return None
        parts.append(numbers + [_digest(rows[:, numeric_end:], tail_lengths[lo:lo + step])])
    cols = [np.concatenate(c) for c in zip(*parts, strict=True)]
    data: dict[str, object] = dict(zip(("xrdu", "rdu", "tile"), cols[:3], strict=True))
    data.update(zip(_PCT, cols[3:9], strict=True))
    return data, cols[9]


def _gather(arr: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes from each (ascending) start as a (rows x width) matrix; blanks past
    the end of ``arr``."""
    inside = int(np.searchsorted(starts, len(arr) - width, side="right"))
    if inside < len(starts):  # rows near the end: gather them from a short padded copy
        lo = int(starts[inside])
        tail = np.full(int(starts[-1]) - lo + width, 32, dtype=np.uint8)
        tail[:max(len(arr) - lo, 0)] = arr[lo:]
        return np.concatenate([_gather(arr, starts[:inside], width),
                               _gather(tail, starts[inside:] - lo, width)])
    return np.lib.stride_tricks.sliding_window_view(arr, width)[starts]


def _digest(tails: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each row's first ``length`` bytes (a rows x 8k matrix)."""
    words = np.ascontiguousarray(tails).view("<u8")
    nwords = words.shape[1]
    keep = _KEEP[np.clip(lengths[:, None] - 8 * np.arange(nwords), 0, 8)]
    powers = _powers(nwords)
    digest: np.ndarray = ((words & keep) * powers).sum(axis=1, dtype=np.uint64)
    return digest + lengths.astype(np.uint64) * _powers(nwords + 1)[0]


def _powers(n: int) -> np.ndarray:
    """_PRIME ** (n-1), ..., _PRIME ** 0, modulo 2 ** 64."""
    out = [1]
    for _ in range(n - 1):
        out.append(out[-1] * int(_PRIME) % 2**64)
    return np.array(out[::-1], dtype=np.uint64)


def _aligned(rows: np.ndarray, spans: list[tuple[int, int]]) -> bool:
    """The path fills 20 bytes; every numeric field is blank-led; a blank or EOL follows."""
    digits = rows[:, _DIGITS] - np.uint8(48)
    ok = bool((digits < 10).all() and (rows[:, _PATH] == 32).all())
    ok = ok and bool((rows[:, 7:12] == _RDU).all() and (rows[:, 13:19] == _TILE).all())
    ok = ok and bool((rows[:, [lo for lo, _ in spans]] == 32).all())
    last = rows[:, -1]
    return ok and bool(((last == 32) | (last == 10) | (last == 13)).all())


def _numbers(rows: np.ndarray, spans: list[tuple[int, int]]) -> list[np.ndarray]:
    """xrdu, rdu, tile (int64) and the six percentages (float64) of one block of rows.

    The percentages are read together: one digit matrix, checked column by column, and one
    matrix product with each field's powers of ten. A field whose bytes are not all
    right-aligned one-decimal numbers is converted by ``float`` instead.
    """
    ints = [rows[:, k].astype(np.int64) - 48 for k in _DIGITS]
    lo, hi = spans[0][0], spans[5][1]
    digits = rows[:, lo:hi] - np.uint8(48)  # '0'-'9' -> 0-9, ' ' -> 240, '.' -> 254
    is_digit = digits < 10
    digit_col = is_digit.all(axis=0)
    blank_or_digit_col = (is_digit | (digits == 240)).all(axis=0)
    point_col = (digits == 254).all(axis=0)
    weights, firsts = _weights(spans)  # a blank's low nibble is 0
    tenths = np.add.reduceat((digits & np.uint8(15)) * weights, firsts, axis=1)
    out = []
    for k, (a, b) in enumerate(spans):
        a, b = a - lo, b - lo
        if point_col[b - 2] and digit_col[b - 1] and blank_or_digit_col[a:b - 2].all():
            out.append(tenths[:, k] / 10.0)
        else:
            out.append(np.ascontiguousarray(rows[:, a + lo:b + lo]).view(f"S{b - a}")
                       .ravel().astype("float64"))
    return ints + out


@functools.cache
def _weights_for(spans: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    lo = spans[0][0]
    weights = np.zeros(spans[-1][1] - lo, dtype=np.int32)
    for a, b in spans:
        weights[b - 1 - lo] = 1  # tenths; b - 2 is the point
        weights[a - lo:b - 2 - lo] = 10 ** np.arange(b - 2 - a, 0, -1)
    return weights, np.array([a - lo for a, _ in spans])


def _weights(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each digit column's value in tenths of its field, and where each field starts."""
    return _weights_for(tuple(spans))


def row_lines(arr: np.ndarray, needle: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start and end offsets of the lines that begin with ``needle`` (at most 8 bytes), and
    their 1-based line numbers (only ``\\n`` ends a line)."""
    breaks = _newlines(arr)
    first = np.r_[0, breaks + 1]
    line_end = np.r_[breaks, len(arr)]
    near_end = first + 8 > len(arr)  # too close to the end for an 8-byte read
    inside = np.flatnonzero(~near_end)
    words = np.ndarray((max(len(arr) - 7, 0),), dtype="<u8", buffer=arr, strides=(1,))
    mask = np.uint64((1 << (8 * len(needle))) - 1)
    pattern = np.uint64(int.from_bytes(needle, "little"))
    hit = inside[(words[first[inside]] & mask) == pattern]
    last = [i for i in np.flatnonzero(near_end).tolist()
            if arr[first[i]:first[i] + len(needle)].tobytes() == needle]
    hit = np.r_[hit, last].astype(np.int64) if last else hit
    return first[hit].astype(np.int64), line_end[hit].astype(np.int64), hit.astype(np.int64) + 1


def line_numbers(arr: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """1-based line numbers of byte ``offsets`` of ``arr`` (only ``\\n`` ends a line)."""
    return np.searchsorted(_newlines(arr), offsets).astype(np.int64) + 1


def _newlines(arr: np.ndarray) -> np.ndarray:
    """Offsets of the line feeds, found a cache-sized chunk at a time."""
    chunk = 1 << 20
    found = [np.flatnonzero(arr[i:i + chunk] == 10) + i for i in range(0, len(arr), chunk)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


#: PIDs at or beyond this do not fit the Int64 column
INT64_END = 1 << 63


def pid_fits(pid: bytes) -> bool:
    """Whether ``pid`` (ASCII digits, or empty for an idle tile) is a PID the ``pid`` column
    holds: 20-digit ones are beyond Int64 and become missing (with a problem). Only a
    19-digit PID is converted to tell (a 5,000-digit one is past Python's int limit)."""
    digits = pid.lstrip(b"0")
    return bool(pid) and (len(digits) < 19 or len(digits) == 19 and int(digits) < INT64_END)


def _owner(data: dict[str, object], buf: bytes, digest: np.ndarray, tails: np.ndarray,
           ends: np.ndarray) -> list[bytes]:
    """PID, USER and COMMAND from what follows %quiesce (empty for an idle tile).

    The tails repeat from snapshot to snapshot: rows are grouped by the hash of their tail
    bytes, and each distinct tail is split once. Returns the distinct tails.
    """
    codes, _ = pd.factorize(digest)
    first = first_codes(codes)
    distinct = [buf[a:b] for a, b in zip(tails[first].tolist(), ends[first].tolist(),
                                         strict=True)]
    parts = [t.split(None, 2) for t in distinct]
    pids = [p[0] if p else b"" for p in parts]
    if not all(p.isdigit() for p in pids if p):
        raise ValueError("PID is not a number")
    fit = [pid_fits(p) for p in pids]
    missing = np.array([not f for f in fit], dtype=bool)[codes]
    values = np.array([int(p.lstrip(b"0") or b"0") if f else 0
                       for p, f in zip(pids, fit, strict=True)],
                      dtype=np.int64)[codes]
    data["pid"] = pd.arrays.IntegerArray(values, missing)
    too_big = [c for c, (p, f) in enumerate(zip(pids, fit, strict=True)) if p and not f]
    if too_big:
        rows = np.flatnonzero(np.isin(codes, too_big))
        data["too_big"] = [(int(r), "PID", pids[codes[r]]) for r in rows.tolist()]
    data["user"] = strings([p[1] if len(p) > 1 else b"" for p in parts], codes)
    data["command"] = strings([p[2].rstrip() if len(p) > 2 else b"" for p in parts], codes)
    return distinct
