"""Vectorised reading of sntilestat's aligned output: numpy slices at the header's columns.

sntilestat right-aligns every column under its header label and pads the tile path to the
``TILE`` column, so each field sits at a fixed byte range of its row. This module finds the
rows with numpy, gathers each field's bytes as a fixed-width byte string, and converts a
whole column at once. Any row that does not line up makes it return None; the caller then
reads the file with the per-row regex instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: right-aligned under their labels; PID and USER are not (a 7-digit PID overflows "PID")
_NUMERIC = (b"%idle", b"%exec", b"%pload", b"%aload", b"%chkpt", b"%quiesce")
_MAX_ROW = 512
#: width of '/XRDU_x/RDU_y/TILE_z' (one-digit numbers); other widths take the regex path
_PATH = 20


def layout(header: bytes) -> list[tuple[int, int]] | None:
    """(start, end) byte ranges of %idle ... USER within a row, from the header's label ends."""
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


def read(buf: bytes, header: bytes) -> dict[str, object] | None:
    """Columns xrdu, rdu, tile, the six *_pct, pid, user, command (positions ``starts``)."""
    spans = layout(header.rstrip(b"\r"))
    arr = np.frombuffer(buf, dtype=np.uint8)
    starts = _find(arr, b"/XRDU_")
    if spans is None or not len(starts):
        return None
    ends = _line_ends(arr, starts)
    if (ends - starts > _MAX_ROW).any() or (starts + spans[5][1] > ends).any():
        return None
    path = _gather(arr, starts, 0, 20)
    if not _path_ok(path, arr, starts, ends):
        return None
    try:
        data = _fields(arr, starts, ends, spans)
        _owner(data, buf, starts + spans[-1][1], ends)
    except ValueError:  # a field that is not a number where the header says one is
        return None
    numbers = path[:, [6, 12, 19]].astype(np.int64) - 48
    data["xrdu"], data["rdu"], data["tile"] = numbers[:, 0], numbers[:, 1], numbers[:, 2]
    return data


def _find(arr: np.ndarray, needle: bytes) -> np.ndarray:
    """Start offsets of ``needle`` in ``arr`` that begin a line (after optional blanks)."""
    n = len(arr) - len(needle) + 1
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    hits = np.flatnonzero(arr[:n] == needle[0])
    for k, byte in enumerate(needle[1:], 1):
        hits = hits[arr[hits + k] == byte]
    prev = arr[np.maximum(hits - 1, 0)]
    at_line_start = (hits == 0) | np.isin(prev, (10, 13, 32, 9))
    return hits[at_line_start].astype(np.int64)


def _line_ends(arr: np.ndarray, starts: np.ndarray) -> np.ndarray:
    breaks = np.flatnonzero((arr == 10) | (arr == 13))
    idx = np.searchsorted(breaks, starts)
    return np.where(idx < len(breaks), breaks[np.minimum(idx, len(breaks) - 1)], len(arr))


def _gather(arr: np.ndarray, starts: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return arr[starts[:, None] + np.arange(lo, hi)[None, :]]


def _path_ok(path: np.ndarray, arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    digits = path[:, [6, 12, 19]]
    after = np.where(starts + 20 < ends, arr[np.minimum(starts + 20, len(arr) - 1)], 32)
    return bool(((digits >= 48) & (digits <= 57)).all() and (after == 32).all()
                and (path[:, 7:12] == np.frombuffer(b"/RDU_", np.uint8)).all()
                and (path[:, 13:19] == np.frombuffer(b"/TILE_", np.uint8)).all())


def _fields(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray,
            spans: list[tuple[int, int]]) -> dict[str, object]:
    names = ("idle_pct", "exec_pct", "pload_pct", "aload_pct", "chkpt_pct", "quiesce_pct")
    out: dict[str, object] = {}
    for name, (lo, hi) in zip(names, spans[:6], strict=True):
        out[name] = _decimal(_column(arr, starts, ends, lo, hi))
    return out


def _owner(data: dict[str, object], buf: bytes, tails: np.ndarray, ends: np.ndarray) -> None:
    """PID, USER and COMMAND from what follows %quiesce (empty for an idle tile).

    The tails repeat from snapshot to snapshot, so each distinct one is split once.
    """
    codes, uniques = pd.factorize(pd.Series(
        [buf[a:b] for a, b in zip(tails.tolist(), ends.tolist(), strict=True)], dtype=object))
    parts = [u.split(None, 2) for u in uniques]
    pids = [p[0] if p else b"" for p in parts]
    if not all(p.isdigit() for p in pids if p):
        raise ValueError("PID is not a number")
    missing = np.array([not p for p in pids], dtype=bool)[codes]
    values = np.array([int(p or 0) for p in pids], dtype=np.int64)[codes]
    data["pid"] = pd.arrays.IntegerArray(values, missing)
    data["user"] = _categorical([p[1] if len(p) > 1 else b"" for p in parts], codes)
    data["command"] = _categorical([p[2].rstrip() if len(p) > 2 else b"" for p in parts], codes)


def _categorical(values: list[bytes], codes: np.ndarray) -> pd.Categorical:
    """Decode each distinct value once; empty becomes missing."""
    texts = [v.decode("utf-8", "replace") or None for v in values]
    cats = list(dict.fromkeys(t for t in texts if t is not None))
    lookup = np.array([cats.index(t) if t is not None else -1 for t in texts] or [-1])
    return pd.Categorical.from_codes(lookup[codes], categories=cats)


def _decimal(block: np.ndarray) -> np.ndarray:
    """Right-aligned one-decimal numbers ('  91.6', ' 100.0') to float, by digit arithmetic."""
    whole, point, frac = block[:, :-2], block[:, -2], block[:, -1]
    digit = (whole >= 48) & (whole <= 57)
    if not ((point == 46).all() and ((frac >= 48) & (frac <= 57)).all()
            and (digit | (whole == 32)).all()):
        width = block.shape[1]
        return np.ascontiguousarray(block).view(f"S{width}").ravel().astype("float64")
    powers = 10 ** np.arange(whole.shape[1] - 1, -1, -1, dtype=np.int64)
    units = np.where(digit, whole.astype(np.int64) - 48, 0) @ powers
    return units + (frac.astype(np.int64) - 48) / 10.0


def _column(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray, lo: int, hi: int,
            ) -> np.ndarray:
    """Bytes lo:hi of every row (spaces past a row's end), checked to be one aligned token."""
    block = _gather(arr, starts, lo, hi)
    block = np.where((starts[:, None] + np.arange(lo, hi)[None, :]) < ends[:, None], block, 32)
    if (block[:, 0] != 32).any():  # a value ran into its left neighbour: not aligned
        raise ValueError("misaligned column")
    after = starts + hi
    nxt = np.where(after < ends, arr[np.minimum(after, len(arr) - 1)], 32)
    if (nxt != 32).any():
        raise ValueError("misaligned column")
    return block.astype(np.uint8)
