"""Assemble the hvd_* frames from the matched stack (see :mod:`.build`).

Everything here works on whole columns; each frame is built once, its labels as
categoricals from integer codes, and takes its columns as they are (``copy=False``: a
DataFrame made from a dict copies its arrays by default, which held every frame twice).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import Problem
from .build import (
    MAX_ELEMENTS,
    B,
    Events,
    Stack,
    X,
    dtype_size,
    oversized,
    segment_cumsum,
    shape_elements,
)
from .decode import Columns, concat

NEGOTIATE = "NEGOTIATE_"


@dataclass
class Names:
    """What each name code means."""

    negotiate: np.ndarray    # bool: NEGOTIATE_<OP>
    rank: np.ndarray         # int: the rank a tick names, -1 when not a digit string
    op_code: np.ndarray      # code into op_labels: the op a name belongs to
    op_labels: list[str]

    @classmethod
    def of(cls, ev: Events) -> Names:
        labels = [str(s) for s in ev.labels]
        neg = np.array([s.startswith(NEGOTIATE) for s in labels], bool)
        # a tick names its rank in ASCII digits ('²'.isdigit() is True, int('²') fails)
        rank = np.array([int(s) if s.isascii() and s.isdigit() and len(s) < 10 else -1
                         for s in labels], np.int64)
        ops = [s[len(NEGOTIATE):] if s.startswith(NEGOTIATE) else s for s in labels]
        op_labels = list(dict.fromkeys(ops))
        where = {s: i for i, s in enumerate(op_labels)}
        return cls(neg, rank, np.array([where[s] for s in ops], np.int32), op_labels)


@dataclass
class Meta:
    """Per-input facts from the metadata records."""

    tensor_of_pid: dict[int, str] = field(default_factory=dict)
    start_epoch_us: int | None = None
    conflicts: int = 0

    @classmethod
    def of(cls, ev: Events, cols: Columns) -> Meta:
        meta = cls()
        process_name = cols.names.get("process_name", -2)
        for idx, name, start in cols.meta:
            if start is not None and meta.start_epoch_us is None:
                meta.start_epoch_us = int(start)
            if name is None or ev.ph[idx] != ord("M") or ev.name[idx] != process_name:
                continue
            pid = int(ev.pid[idx])
            known = meta.tensor_of_pid.setdefault(pid, name)
            meta.conflicts += known != name
        return meta


def codes_to_cat(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    """A categorical from integer codes (-1 = missing), keeping only the labels used."""
    if not len(labels):
        return pd.Categorical.from_codes(np.full(len(codes), -1, np.int8), [])
    valid = codes >= 0
    used = np.flatnonzero(np.bincount(codes[valid], minlength=len(labels)) > 0)
    remap = np.full(len(labels), -1, np.int64)
    remap[used] = np.arange(len(used))
    new = np.where(valid, remap[np.where(valid, codes, 0)], -1)
    cats = [labels[i] for i in used]
    dtype = np.int8 if len(cats) < 127 else np.int16 if len(cats) < 32767 else np.int32
    return pd.Categorical.from_codes(new.astype(dtype), pd.Index(cats, dtype=object))


def tensor_cat(pids: np.ndarray, meta: Meta) -> pd.Categorical:
    """Tensor names for pids; a pid without a process_name record is '(pid N)'."""
    if not len(pids):
        return codes_to_cat(np.empty(0, np.int64), [])
    uniq, inverse = _unique_small(pids)
    labels: dict[str, int] = {}
    code_of = np.array([labels.setdefault(meta.tensor_of_pid.get(int(p), f"(pid {p})"),
                                          len(labels)) for p in uniq], np.int64)
    return codes_to_cat(code_of[inverse], list(labels))


def _unique_small(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= (1 << 22):
        u, inv = np.unique(values, return_inverse=True)
        return u, inv
    present = np.bincount(values - lo, minlength=hi - lo + 1) > 0
    uniq = np.flatnonzero(present) + lo
    lut = np.zeros(hi - lo + 1, np.int64)
    lut[uniq - lo] = np.arange(len(uniq))
    return uniq, lut[values - lo]


def int_na(values: np.ndarray, na: np.ndarray) -> pd.arrays.IntegerArray:
    """An Int64 column (the schema's dtype, so conform has nothing to copy)."""
    return pd.arrays.IntegerArray(values.astype(np.int64), na.astype(bool))


def int_col(values: np.ndarray) -> pd.arrays.IntegerArray:
    return int_na(values, np.zeros(len(values), bool))


def source_cat(source: str, n: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.zeros(n, np.int8), pd.Index([source], dtype=object))


@dataclass
class Intervals:
    """One entry per B record, in stack order (pid, then file order)."""

    pos: np.ndarray        # position in the stack order
    gidx: np.ndarray       # global event index of the B
    egidx: np.ndarray      # global event index of its E, -1 when open
    level: np.ndarray      # 1 = top level (negotiation or op)
    start: np.ndarray
    dur: np.ndarray        # NaN when open, a time is unknown, or the E is earlier than the B
    name: np.ndarray
    pid: np.ndarray
    op_index: np.ndarray   # -1 when unknown
    top_name: np.ndarray   # name code of the enclosing top-level B (its own when top level)
    backwards: np.ndarray  # entries whose E is earlier than their B (duration left NaN)

    @property
    def complete(self) -> np.ndarray:
        """Closed by an E (its duration may still be unknown)."""
        return self.egidx >= 0

    @classmethod
    def of(cls, ev: Events, st: Stack, names: Names) -> Intervals:
        pos = np.flatnonzero(st.kind == B).astype(st.order.dtype)
        gidx, epos = st.order[pos], st.close[pos]
        done = epos >= 0
        egidx = np.where(done, st.order[np.where(done, epos, 0)], -1)
        start = ev.ts[gidx]
        end = np.where(done, ev.ts[np.where(done, egidx, 0)], np.nan)
        level = st.depth[pos]
        top_at = np.flatnonzero(level == 1)          # entries that are top level
        top = np.where(level == 1, pos, latest_before(pos[top_at], pos, st.pid))
        entry = np.searchsorted(pos[top_at], top)    # the top-level entry of each
        ok = top >= 0
        own = _op_index(st.pid[pos[top_at]], names.negotiate[ev.name[gidx[top_at]]])
        op_index = np.where(ok, own[np.minimum(entry, len(own) - 1)] if len(own) else -1, -1)
        top_name = ev.name[np.where(ok, st.order[np.maximum(top, 0)], gidx)]
        dur = end - start
        backwards = np.flatnonzero(dur < 0)
        dur[backwards] = np.nan                      # never a negative duration
        return cls(pos, gidx, egidx, level, start, dur, ev.name[gidx],
                   st.pid[pos], op_index.astype(np.int32), top_name, backwards)


@dataclass
class Ticks:
    """The rank-ready ticks (in stack order) and the negotiation each belongs to."""

    gidx: np.ndarray     # global event index
    pid: np.ndarray
    ts: np.ndarray
    rank: np.ndarray
    nego: np.ndarray     # stack position of the negotiation's B, -1 when it is not in the file
    entry: np.ndarray    # that negotiation's index in Intervals (valid where nego >= 0)

    @classmethod
    def of(cls, ev: Events, st: Stack, iv: Intervals, names: Names) -> Ticks:
        tp = np.flatnonzero(st.kind == X).astype(st.order.dtype)
        nego = (iv.level == 1) & names.negotiate[iv.name]
        ln = latest_before(iv.pos[nego], tp, st.pid)
        entry = np.searchsorted(iv.pos, np.maximum(ln, 0))
        entry = np.minimum(entry, max(len(iv.pos) - 1, 0))
        gidx = st.order[tp]
        return cls(gidx, st.pid[tp], ev.ts[gidx], names.rank[ev.name[gidx]], ln, entry)


def latest_before(marks: np.ndarray, query: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """For stack positions ``query``: the latest of the sorted positions ``marks`` at or
    before each, in the same pid; -1 when there is none."""
    if not marks.size:
        return np.full(len(query), -1, np.int64)
    j = np.searchsorted(marks, query, side="right") - 1
    cand = marks[np.maximum(j, 0)]
    return np.where((j >= 0) & (pid[cand] == pid[query]), cand, -1)


def _op_index(pid: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """For the top-level intervals (stack order): how many ops their tensor ran before.

    An op's own index counts the ops before it; a negotiation gets the index of the op
    that follows it, so a negotiation and its op share op_index.
    """
    if not pid.size:
        return np.empty(0, np.int64)
    is_op = (~neg).astype(np.int64)
    new = np.ones(len(pid), bool)
    new[1:] = pid[1:] != pid[:-1]
    return segment_cumsum(is_op, new) - is_op


def activities_frame(b: Built) -> pd.DataFrame:
    """hvd_activities, in file order."""
    iv, names, meta, source = b.iv, b.names, b.meta, b.source
    perm = b.perm
    top_name = iv.top_name[perm]
    level = iv.level[perm]
    neg = names.negotiate[top_name]
    kind = np.where(level > 1, 2, np.where(neg, 0, 1))
    complete = iv.complete[perm]
    return pd.DataFrame({
        "source": source_cat(source, len(perm)),
        "tensor": tensor_cat(iv.pid[perm], meta),
        "pid": int_col(iv.pid[perm]),
        "op": codes_to_cat(names.op_code[top_name], names.op_labels),
        "op_index": int_na(iv.op_index[perm], iv.op_index[perm] < 0),
        "activity": codes_to_cat(iv.name[perm], [str(s) for s in b.labels]),
        "level": pd.Categorical.from_codes(kind.astype(np.int8),
                                           ["negotiate", "op", "activity"]),
        "depth": int_col(level - 1),
        "start_us": iv.start[perm],
        "dur_us": iv.dur[perm],
        "complete": complete,
    }, copy=False)


def file_order(gidx: np.ndarray, n_events: int) -> np.ndarray:
    """Permutation that sorts ``gidx`` (distinct event indices) in linear time."""
    row_of = np.full(n_events, -1, gidx.dtype)
    row_of[gidx] = np.arange(len(gidx), dtype=gidx.dtype)
    return row_of[row_of >= 0]


def op_bytes(cols: Columns, egidx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dtype and shape codes (-1 = none) of the E records at ``egidx``."""
    idx = concat(cols.arg_idx, np.int64)
    dt = concat(cols.arg_dtype, np.int32)
    sh = concat(cols.arg_shape, np.int32)
    if not idx.size:
        none = np.full(len(egidx), -1, np.int64)
        return none, none.copy()
    at = np.clip(np.searchsorted(idx, egidx), 0, len(idx) - 1)
    hit = (idx[at] == egidx) & (egidx >= 0)
    return np.where(hit, dt[at], -1), np.where(hit, sh[at], -1)


def bytes_of(cols: Columns, dt: np.ndarray, sh: np.ndarray) -> pd.arrays.IntegerArray:
    """prod(shape) x sizeof(dtype); missing when either is unknown."""
    size = np.array([dtype_size(s) or -1 for s in cols.dtypes.labels()] or [-1], np.int64)
    elems = np.array([_or(shape_elements(s), -1) for s in cols.shapes.labels()] or [-1],
                     np.int64)
    a, b = size[np.maximum(dt, 0)], elems[np.maximum(sh, 0)]
    bad = (dt < 0) | (sh < 0) | (a < 0) | (b < 0)
    return int_na(np.where(bad, 0, a * b), bad)


def _or(v: int | None, default: int) -> int:
    return default if v is None else v



@dataclass
class Built:
    """Everything the frames are made from. The events and the stack (about 32 bytes per
    event) are dropped by then: what is needed of them is in these arrays."""

    n_events: int
    labels: np.ndarray    # name code -> name
    ts0: float
    span_us: float
    cycle_ts: np.ndarray  # CYCLE_START times
    iv: Intervals
    ticks: Ticks | None   # dropped once hvd_ready is built
    names: Names
    meta: Meta
    cols: Columns
    source: str
    pids: np.ndarray      # distinct pids with B, E or tick records
    orphans: int          # E records that closed nothing
    backwards: int = 0    # timed events earlier than the one before them (file order)
    max_back_us: float = 0.0

    @property
    def perm(self) -> np.ndarray:
        """Intervals in file order (the order of the B records)."""
        if not hasattr(self, "_perm"):
            self._perm = file_order(self.iv.gidx, self.n_events)
        return self._perm

    def time_problems(self, acts: pd.DataFrame) -> list[Problem]:
        """Timestamps that go backwards (once per file, with the count), the durations that
        would have been negative (left empty: a negative duration is never kept), and
        shapes too large for their bytes to be counted. ``acts``: hvd_activities."""
        out: list[Problem] = []
        if self.backwards:
            out.append(Problem(self.source, f"timestamps go backwards {self.backwards:,} "
                               "time(s) in file order (largest step back "
                               f"{self.max_back_us / 1e3:,.3f} ms): the records were not "
                               "written in time order (a merged or rewritten file, or "
                               "several writer threads); B and E records are still matched "
                               "in file order"))
        if len(self.iv.backwards):
            k = self.iv.backwards[0]
            first = acts.iloc[int(np.flatnonzero(self.perm == k)[0])]
            out.append(Problem(self.source, f"{len(self.iv.backwards):,} interval(s) end "
                               "before they start (their E record has an earlier timestamp "
                               "than their B): their duration is left empty (first: "
                               f"{first['activity']} of {first['tensor']}, B at ts "
                               f"{self.iv.start[k] + self.ts0:.16g})", severity="error"))
        back = int(np.count_nonzero(np.diff(self.cycle_ts) < 0))
        if back:
            out.append(Problem(self.source, f"{back:,} CYCLE_START marker(s) are earlier than "
                               "the one before them: those cycle times are left empty",
                               severity="error"))
        big = sum(map(oversized, self.cols.shapes.labels()))
        if big:
            out.append(Problem(self.source, f"{big:,} distinct tensor shape(s) have more than "
                               f"{MAX_ELEMENTS:,} elements: the bytes of their ops are left "
                               "empty", severity="error"))
        return out


def tensors_frame(b: Built) -> pd.DataFrame:
    """hvd_tensors: one row per op instance (top-level interval that is not a negotiation)."""
    iv, names, p = b.iv, b.names, b.perm
    level, name, pid, dur = iv.level[p], iv.name[p], iv.pid[p], iv.dur[p]
    is_op = (level == 1) & ~names.negotiate[name]
    group = _fusion_groups(is_op, name, pid)
    nego = _negotiation_before(b)[p]
    ops = np.flatnonzero(is_op)
    dt, sh = op_bytes(b.cols, iv.egidx[p][ops])
    members = np.bincount(group[ops]) if ops.size else np.zeros(0, np.int64)
    return pd.DataFrame({
        "source": source_cat(b.source, len(ops)),
        "tensor": tensor_cat(pid[ops], b.meta),
        "pid": int_col(pid[ops]),
        "op": codes_to_cat(names.op_code[name[ops]], names.op_labels),
        "op_index": int_na(iv.op_index[p][ops], iv.op_index[p][ops] < 0),
        "start_us": iv.start[p][ops],
        "dur_us": dur[ops],
        "negotiate_us": nego[ops],
        "dtype": codes_to_cat(dt, b.cols.dtypes.labels()),
        "shape": _labels_at(b.cols.shapes.labels(), sh),
        "bytes": bytes_of(b.cols, dt, sh),
        "fusion_group": int_col(group[ops]),
        "fused_tensors": int_col(members[group[ops]]),
        "complete": iv.complete[p][ops],
    }, copy=False)


def _labels_at(labels: list[str], codes: np.ndarray) -> pd.arrays.StringArray:
    """Strings by code (-1 = missing)."""
    table = np.array(labels + [None], dtype=object)
    return pd.array(table[np.where(codes >= 0, codes, len(labels))], dtype="string")


def _fusion_groups(is_op: np.ndarray, name: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """Fused ops: runs of consecutive op-level B records (among all B records, in file
    order) with the same op name and different tensors; Horovod starts every tensor of a
    response in one loop. Returns the group number per B (-1 for non-op B records)."""
    cont = np.zeros(len(is_op), bool)
    cont[1:] = is_op[1:] & is_op[:-1] & (name[1:] == name[:-1]) & (pid[1:] != pid[:-1])
    start = is_op & ~cont
    return np.where(is_op, np.cumsum(start) - 1, -1)


def _negotiation_before(b: Built) -> np.ndarray:
    """Per interval (stack order): duration of the negotiation just before it in its tensor."""
    iv, neg = b.iv, b.names.negotiate
    out = np.full(len(iv.pos), np.nan)
    top = np.flatnonzero(iv.level == 1)
    if top.size < 2:
        return out
    prev, cur = top[:-1], top[1:]
    ok = neg[iv.name[prev]] & ~neg[iv.name[cur]] & (iv.pid[prev] == iv.pid[cur])
    out[cur[ok]] = iv.dur[prev[ok]]
    return out


def ready_frame(b: Built) -> pd.DataFrame:
    """hvd_ready: one row per rank tick, with its lag behind the first rank ready."""
    names, iv, tk = b.names, b.iv, b.ticks
    assert tk is not None, "hvd_ready is built once"
    ln, gidx, ts = tk.nego, tk.gidx, tk.ts
    new = np.ones(len(ln), bool)             # runs: one negotiation, or one pid's stray ticks
    new[1:] = (ln[1:] != ln[:-1]) | (tk.pid[1:] != tk.pid[:-1])
    lag, last, size = _lags(ts, new)
    op_index = np.where(ln >= 0, iv.op_index[tk.entry], -1) if len(iv.pos) else ln
    op = np.where(ln >= 0, names.op_code[iv.name[tk.entry]], -1) if len(iv.pos) else ln
    p = file_order(gidx, b.n_events)
    return pd.DataFrame({
        "source": source_cat(b.source, len(p)),
        "tensor": tensor_cat(tk.pid[p], b.meta),
        "pid": int_col(tk.pid[p]),
        "op": codes_to_cat(op[p], names.op_labels),
        "op_index": int_na(op_index[p], op_index[p] < 0),
        "rank": int_col(tk.rank[p]),
        "ts_us": ts[p],
        "lag_us": lag[p],
        "last_ready": last[p],
        "ranks_ready": int_col(size[p]),
    }, copy=False)


def _lags(ts: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Within the runs that ``new`` starts: ts minus the run's first-ready ts, the
    last-ready flag (the latest tick; the later record on ties) and the run's size. A tick
    without a time has no lag and is never last."""
    n = len(ts)
    if not n:
        return np.empty(0), np.zeros(0, bool), np.zeros(0, np.int64)
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, n))
    lag = ts - np.repeat(np.fmin.reduceat(ts, starts), sizes)
    at_max = ts == np.repeat(np.fmax.reduceat(ts, starts), sizes)
    idx = np.flatnonzero(at_max)
    run = (np.cumsum(new) - 1)[idx]
    keep = np.ones(len(idx), bool)
    keep[:-1] = run[:-1] != run[1:]
    last = np.zeros(n, bool)
    last[idx[keep]] = True
    return lag, last, np.repeat(sizes, sizes).astype(np.int64)


def cycle_times(ev: Events, cols: Columns) -> np.ndarray:
    """Times of the CYCLE_START markers."""
    code = cols.names.get("CYCLE_START", -2)
    return ev.ts[(ev.name == code) & np.isin(ev.ph, [ord("i"), ord("I")])]


def cycles_frame(b: Built) -> pd.DataFrame:
    """hvd_cycles: one row per CYCLE_START marker, with the time to the next one."""
    ts = b.cycle_ts
    dur = np.append(np.diff(ts), np.nan) if ts.size else ts
    dur[dur < 0] = np.nan                    # a marker earlier than the one before it
    return pd.DataFrame({
        "source": source_cat(b.source, len(ts)),
        "cycle": int_col(np.arange(len(ts))),
        "ts_us": ts,
        "dur_us": dur,
    }, copy=False)
