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
    """Columns xrdu, rdu, tile, the six *_pct, pid, user, command; None if not aligned."""
    spans = layout(header.rstrip(b"\r"))
    arr = np.frombuffer(buf, dtype=np.uint8)
    starts, ends = _row_lines(arr, b"/XRDU_")
    if spans is None or not len(starts):
        return None
    numeric_end = spans[5][1]
    if (ends - starts > _MAX_ROW).any() or (starts + numeric_end > ends).any():
        return None
    rows = _rows(arr, starts, numeric_end + 1)  # one copy of each row's fixed part
    if not _aligned(rows, spans):
        return None
    try:
        data = _fields(rows, spans)
        _owner(data, buf, arr, starts + numeric_end, ends)
    except ValueError:  # a field that is not a number where the header says one is
        return None
    numbers = rows[:, [6, 12, 19]].astype(np.int64) - 48
    data["xrdu"], data["rdu"], data["tile"] = numbers[:, 0], numbers[:, 1], numbers[:, 2]
    return data


def _rows(arr: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes from each start as a (rows x width) matrix, via a strided view."""
    if len(arr) < int(starts.max()) + width:
        arr = np.concatenate([arr, np.full(width, 32, dtype=np.uint8)])
    return np.lib.stride_tricks.sliding_window_view(arr, width)[starts]


def _aligned(rows: np.ndarray, spans: list[tuple[int, int]]) -> bool:
    """The path fills 20 bytes; every numeric field is blank-led; a blank or EOL follows."""
    digits = rows[:, [6, 12, 19]]
    ok = bool(((digits >= 48) & (digits <= 57)).all() and (rows[:, _PATH] == 32).all())
    ok = ok and bool((rows[:, 7:12] == np.frombuffer(b"/RDU_", np.uint8)).all())
    ok = ok and bool((rows[:, 13:19] == np.frombuffer(b"/TILE_", np.uint8)).all())
    ok = ok and all(bool((rows[:, lo] == 32).all()) for lo, _ in spans)
    return ok and bool(np.isin(rows[:, -1], (32, 10, 13)).all())


def _row_lines(arr: np.ndarray, needle: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of the lines that begin with ``needle`` (one pass over ``arr``)."""
    breaks = np.flatnonzero(arr == 10)
    first = np.r_[0, breaks + 1]
    line_end = np.r_[breaks, len(arr)]
    keep = first + len(needle) <= len(arr)
    first, line_end = first[keep], line_end[keep]
    for k, byte in enumerate(needle):
        hit = arr[first + k] == byte
        first, line_end = first[hit], line_end[hit]
    return first.astype(np.int64), line_end.astype(np.int64)


def _fields(rows: np.ndarray, spans: list[tuple[int, int]]) -> dict[str, object]:
    names = ("idle_pct", "exec_pct", "pload_pct", "aload_pct", "chkpt_pct", "quiesce_pct")
    return {name: _decimal(rows[:, lo:hi]) for name, (lo, hi) in zip(names, spans, strict=True)}


def _owner(data: dict[str, object], buf: bytes, arr: np.ndarray, tails: np.ndarray,
           ends: np.ndarray) -> None:
    """PID, USER and COMMAND from what follows %quiesce (empty for an idle tile).

    The tails repeat from snapshot to snapshot: rows are grouped by a 64-bit hash of their
    tail bytes (numpy), and each distinct tail is split once.
    """
    length = ends - tails
    width = -(-max(int(length.max()), 1) // 8) * 8
    block = np.where(np.arange(width)[None, :] < length[:, None], _rows(arr, tails, width), 0)
    words = np.ascontiguousarray(block, dtype=np.uint8).view(np.uint64)
    digest = length.astype(np.uint64)
    for k in range(words.shape[1]):  # polynomial hash over the tail's 8-byte words
        digest = digest * np.uint64(1099511628211) + words[:, k]
    codes, _ = pd.factorize(digest)
    first = np.unique(codes, return_index=True)[1]
    parts = [buf[a:b].split(None, 2) for a, b in zip(tails[first].tolist(),
                                                     ends[first].tolist(), strict=True)]
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
    tenths = np.zeros(len(block), dtype=np.int32)
    for k in range(whole.shape[1]):
        tenths = tenths * 10 + np.where(digit[:, k], whole[:, k] - 48, 0)
    return (tenths * 10 + (frac.astype(np.int32) - 48)) / 10.0
