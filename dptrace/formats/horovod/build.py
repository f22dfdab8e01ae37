"""From decoded event columns to the hvd_* tables, vectorised (no loop per event).

``E`` records carry no name, so each is matched to the ``B`` it closes with a stack per
``pid`` (one pid per tensor). With events sorted by pid (stably, so file order holds
within a tensor), the stack depth is a cumulative sum of +1 per ``B`` and -1 per ``E``;
an ``E`` that would take the depth below zero closes nothing and is ignored (its running
minimum is subtracted). At each depth, a tensor's ``B`` and ``E`` records then alternate,
so a ``B`` is closed by the next record at its depth when that is an ``E`` of the same
pid; a ``B`` that is not stays open (a killed job).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .decode import Columns, take_all

B, E, X, M = (ord(c) for c in "BEXM")
INSTANT = (ord("i"), ord("I"), ord("R"))
#: bytes per element of Horovod's DataType_Name values (newer builds prefix HOROVOD_)
DTYPE_BYTES = {"uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "int32": 4, "int64": 8,
               "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "bool": 1}
_DIMS = re.compile(r"-?\d+")


@dataclass
class Events:
    """All events of one input as arrays, ts relative to the first event."""

    ph: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    pid: np.ndarray
    labels: np.ndarray          # name code -> name
    ts0: float                  # raw ts of the first event (the offset removed)
    backwards: int = 0          # timed events earlier than the timed event before them
    max_back_us: float = 0.0    # the largest such step back

    @classmethod
    def from_columns(cls, cols: Columns) -> Events:
        """Concatenate the block columns (and drop the blocks: memory is the limit)."""
        ph, ts = take_all(cols.ph, np.uint8), take_all(cols.ts, np.float64)
        name, pid = take_all(cols.name, np.int32), take_all(cols.pid, np.int32)
        timed = ts[(ph != M) & ~np.isnan(ts)]
        ts0 = float(timed.min()) if timed.size else 0.0
        step = np.diff(timed)
        back = int(np.count_nonzero(step < 0))
        max_back = float(-step.min()) if back else 0.0
        del timed, step
        ts -= ts0
        labels = np.array(cols.names.labels() or [""], dtype=object)
        return cls(ph, name, ts, pid, labels, ts0, back, max_back)


def index_dtype(n: int) -> type[np.signedinteger]:
    """int32 positions while they fit (half the memory of int64)."""
    return np.int32 if n < (1 << 31) - 1 else np.int64


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """Stable argsort of integer keys; a 16-bit radix sort when their range allows."""
    if not keys.size:
        return np.empty(0, np.int64)
    low, top = int(keys.min()), int(keys.max()) - int(keys.min())
    if top < (1 << 16):
        return np.argsort((keys - low).astype(np.uint16), kind="stable")
    if top < (1 << 32):
        k = keys.astype(np.int64) - low
        lo = np.argsort((k & 0xFFFF).astype(np.uint16), kind="stable")
        return lo[np.argsort((k[lo] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(keys, kind="stable")   # keys - low could overflow int64


def segment_cumsum(values: np.ndarray, new_group: np.ndarray,
                   dtype: type[np.signedinteger] = np.int64) -> np.ndarray:
    """Cumulative sum restarting where ``new_group`` is True (first element starts one)."""
    cs = np.cumsum(values, dtype=dtype)
    starts = np.flatnonzero(new_group)
    before = np.where(starts > 0, cs[starts - 1], 0)
    sizes = np.diff(np.append(starts, len(values)))
    return cs - np.repeat(before, sizes)


@dataclass
class Stack:
    """B/E/tick events sorted by pid, with their stack depth and the B -> E matching."""

    order: np.ndarray     # global event index, sorted by pid then file order
    pid: np.ndarray
    kind: np.ndarray      # ph byte
    depth: np.ndarray     # B: its level (1 = top); E: level after the pop
    orphan: np.ndarray    # E closing nothing
    close: np.ndarray     # for a B: position (in this order) of its E, else -1
    new_group: np.ndarray

    @classmethod
    def build(cls, ev: Events, is_tick_name: np.ndarray) -> Stack:
        sel = (ev.ph == B) | (ev.ph == E) | ((ev.ph == X) & is_tick_name[ev.name])
        idx = np.flatnonzero(sel).astype(index_dtype(len(sel)))
        order = idx[stable_argsort(ev.pid[idx])]
        del sel, idx
        pid, kind = ev.pid[order], ev.ph[order]
        new = np.ones(len(order), bool)
        new[1:] = pid[1:] != pid[:-1]
        step = (kind == B).astype(np.int8) - (kind == E)
        depth = segment_cumsum(step, new, np.int32)
        del step
        orphan = np.zeros(len(order), bool)
        if depth.size and depth.min() < 0:
            depth, orphan = _clamp(depth, new, kind)
        close = _match(kind, depth, orphan, pid)
        return cls(order, pid, kind, depth, orphan, close, new)

    @property
    def pids(self) -> np.ndarray:
        """The distinct pids with B, E or tick records, ascending."""
        return self.pid[self.new_group]


def _clamp(depth: np.ndarray, new: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ignore E records that pop an empty stack: subtract the running minimum below 0."""
    gid = np.cumsum(new) - 1
    big = 4 * (len(depth) + 1)
    low = np.minimum(np.minimum.accumulate(depth - gid * big) + gid * big, 0)
    prev = np.zeros_like(low)
    prev[1:] = low[:-1]
    prev[new] = 0
    orphan = (kind == E) & (low < prev)
    return depth - low, orphan


def _match(kind: np.ndarray, depth: np.ndarray, orphan: np.ndarray,
           pid: np.ndarray) -> np.ndarray:
    """For each B, the position of the E at its level that follows it in its pid, or -1."""
    close = np.full(len(kind), -1, index_dtype(len(kind)))
    is_b, is_e = kind == B, (kind == E) & ~orphan
    top = int(depth[is_b].max()) if is_b.any() else 0
    for level in range(1, top + 1):
        sub = np.flatnonzero((is_b & (depth == level)) | (is_e & (depth == level - 1)))
        if sub.size < 2:
            continue
        b = is_b[sub]
        pair = b[:-1] & ~b[1:] & (pid[sub[:-1]] == pid[sub[1:]])
        close[sub[:-1][pair]] = sub[1:][pair]
    return close


#: elements of a tensor beyond which a shape is taken as garbage (bytes = elements x 8 must
#: fit an int64)
MAX_ELEMENTS = 1 << 59


def shape_elements(shape: str) -> int | None:
    """'[64, 3, 3, 3]' -> 1728; '[]' (a scalar) -> 1; None when it is not a shape, or when
    it has more than :data:`MAX_ELEMENTS` elements (see :func:`oversized`)."""
    text = shape.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    n = 1
    for d in _DIMS.findall(text):
        if len(d) > 20:                  # int() of thousands of digits is slow, then refused
            return None
        n *= int(d)
        if abs(n) > MAX_ELEMENTS:
            return None
    return n if n >= 0 else None


def oversized(shape: str) -> bool:
    """A shape of more elements than :data:`MAX_ELEMENTS` (so its bytes are left empty)."""
    text = shape.strip()
    if not (text.startswith("[") and text.endswith("]")) or shape_elements(text) is not None:
        return False
    dims = _DIMS.findall(text)
    return all(not d.startswith("-") for d in dims) and "0" not in dims


def dtype_size(dtype: str) -> int | None:
    """Bytes per element of a Horovod dtype name ('float32' or 'HOROVOD_FLOAT32')."""
    key = dtype.strip().lower()
    key = key[len("horovod_"):] if key.startswith("horovod_") else key
    return DTYPE_BYTES.get(key)
