"""Horovod's events out of the Chrome trace container: msgspec structs -> numpy columns.

The container (blocks cut after the last complete event, the framing, record-by-record
retries, byte ranges decoded in parallel) is :mod:`dptrace.formats._chrome`'s; this module
is what Horovod's events hold. Each block is decoded by msgspec into small structs that
name only the fields used (``ph``, ``name``, ``ts``, ``pid``, ``args``); their fields go
straight into numpy columns (:class:`Columns`), names as integer codes; the structs are
dropped with the block.

Numbers that do not fit: ``pid`` must fit a 64-bit integer and ``ts`` (and the start
time) 0 <= ts < 2**63 us (Horovod writes microseconds since the timeline started). The
block decoder does not check this (msgspec constraints cost ~1.3 ms per 16 MB block, 4% of
its decoding): :meth:`Columns.add` checks the block's columns (a pid beyond int64 fails its
conversion; the ts range is two numpy reductions, ~0.2 ms) and raises :class:`OutOfRange`,
a DecodeError, so the block is read record by record with a decoder that has the
constraints. There a ``pid`` that does not fit costs its record (it cannot be matched to
anything); a timestamp out of range is dropped from the record, which is kept without a
time (its B/E record still opens or closes its interval, so the records around it still
match), with an error naming the byte and line. NaN and Infinity are not JSON and
``1e999`` does not fit a float: such records are skipped as malformed.

Duplicate keys (``{"ts": 1, ..., "ts": 2}``): msgspec keeps the last value and says
nothing. Counting the four keys (``"ph":``, ``"name":``, ``"ts":``, ``"pid":``) in
every block and comparing with the fields decoded takes ~9 ms per key per 16 MB block
(``bytearray.count``), about 20% of the decoding time of a block, so the hot path checks
only the first :data:`DUP_SAMPLE` bytes of a file (a writer that duplicates keys does so
in every record; ~3 ms per file). Records read one by one (blocks that failed to
decode) are all checked. ``Columns.dup_keys`` counts what was found; the parser gives one
warning per file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import IO, Annotated, Any, Literal

import msgspec
import numpy as np

from ...errors import Problem
from ...executor import Executor
from .. import _chrome
from .._chrome import MAX_PROBLEMS, Range

#: bytes at the head of a file whose records are checked for duplicate keys
DUP_SAMPLE = 1 << 20
#: bytes per block of a timeline (at most ``_chrome.BLOCK``): the structs of one block live
#: at a time, ~120 bytes an event beside the block's bytes, so a 16 MB block held ~110 MB
#: for its ~250 k events; 4 MB blocks peak 70 MB lower and decode no slower (100 MB file:
#: 1.24 -> 1.02-1.15 CPU s)
BLOCK = 4 << 20
#: timestamps are microseconds since the timeline started, stored as int64 by Horovod
TS_LIMIT = 2.0 ** 63
_Pid = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_Ts = Annotated[float, msgspec.Meta(ge=0.0, lt=TS_LIMIT)]
_DUP_KEYS = (b'"ph":', b'"ts":', b'"pid":')
_NAME_KEY, _EMPTY_NAME = b'"name":', b'"name": ""'


class _Args(msgspec.Struct, gc=False):
    name: str | None = None
    dtype: str | None = None
    shape: str | None = None
    start_time_since_epoch_in_micros: float | None = None


class _Event(msgspec.Struct, gc=False):
    """An event as blocks decode it (ranges checked on the columns, see Columns.add)."""

    ph: str = "?"
    name: str = ""
    ts: float = float("nan")
    pid: int = -1
    args: _Args | None = None


class _StrictArgs(msgspec.Struct, gc=False):
    name: str | None = None
    dtype: str | None = None
    shape: str | None = None
    start_time_since_epoch_in_micros: _Ts | None = None


class _StrictEvent(msgspec.Struct, gc=False):
    """An event as single records decode it: out-of-range numbers fail validation."""

    ph: str = "?"
    name: str = ""
    ts: _Ts = float("nan")
    pid: _Pid = -1
    args: _StrictArgs | None = None


class _LaxEvent(msgspec.Struct, gc=False):
    """An event whose times are not range-checked (the record-by-record route fixes them)."""

    ph: str = "?"
    name: str = ""
    ts: float = float("nan")
    pid: _Pid = -1
    args: _Args | None = None   # the block route's args: times unchecked too


_DECODE_MANY = msgspec.json.Decoder(list[_Event]).decode
_DECODE_ONE = msgspec.json.Decoder(_StrictEvent).decode
_DECODE_LAX = msgspec.json.Decoder(_LaxEvent).decode


class OutOfRange(msgspec.DecodeError):
    """A block holds a number out of its column's range: read it record by record."""


_PH, _NAME, _TS, _PID, _ARGS = (attrgetter(k) for k in ("ph", "name", "ts", "pid", "args"))
_DTYPE, _SHAPE, _ANAME, _START = (attrgetter(k) for k in (
    "dtype", "shape", "name", "start_time_since_epoch_in_micros"))


class _Vocab:
    """Decodes blocks with ``ph`` and ``name`` typed as Literals of the values seen so far.

    msgspec then hands out the Literal's own string objects: nothing is allocated for
    them, and their hashes are cached for the name-code lookup (~17% less CPU per event).
    A block holding a new value fails validation and is decoded again with plain ``str``
    fields, which extends the vocabulary; after :data:`MAX_MISSES` such blocks, or past
    :data:`MAX_WORDS` names (not a Horovod timeline), every block is decoded plainly.
    """

    MAX_MISSES = 16
    MAX_WORDS = 4096

    def __init__(self, phs: frozenset[str] = frozenset(),
                 names: frozenset[str] = frozenset()) -> None:
        self.phs, self.names = set(phs), set(names)
        self.fast: Callable[[Any], list[Any]] | None = None
        self.misses = 0
        if names:
            self._rebuild()

    @classmethod
    def of_head(cls, head: bytes) -> _Vocab:
        """A vocabulary learnt from the complete records in the first bytes of a file."""
        start, end = head.find(b"{"), head.rfind(b"},")
        vocab = cls()
        if 0 <= start < end:
            with contextlib.suppress(*_chrome.DECODE_ERRORS):
                vocab._learn(_DECODE_MANY(b"[" + head[start:end + 1] + b"]"))
        return vocab

    def decode(self, data: Any) -> list[Any]:
        """The events of one block (``[`` ... ``]``); raises msgspec.DecodeError."""
        if self.fast is not None:
            try:
                return self.fast(data)
            except msgspec.ValidationError:
                evs = _DECODE_MANY(data)  # raises when a record is bad, not the vocabulary
                self.misses += 1
        else:
            evs = _DECODE_MANY(data)
        if self.misses < self.MAX_MISSES:
            self._learn(evs)
        return evs

    def _learn(self, evs: list[_Event]) -> None:
        n_ph, n_name = len(self.phs), len(self.names)
        self.phs.update(map(_PH, evs))
        self.names.update(map(_NAME, evs))
        if self.misses >= self.MAX_MISSES or len(self.names) > self.MAX_WORDS:
            self.fast, self.misses = None, self.MAX_MISSES
        elif self.fast is None or (len(self.phs), len(self.names)) != (n_ph, n_name):
            self._rebuild()

    def _rebuild(self) -> None:
        if not self.phs or not self.names:  # a Literal needs at least one value
            self.fast = None
            return
        self.fast = _literal_decoder(tuple(sorted(self.phs)), tuple(sorted(self.names)))

    def seed(self) -> tuple[frozenset[str], frozenset[str]]:
        return frozenset(self.phs), frozenset(self.names)


def _literal_decoder(phs: tuple[str, ...], names: tuple[str, ...]) -> Callable[[Any], list[Any]]:
    """A decoder like ``_DECODE_MANY`` whose ``ph`` and ``name`` accept only these values."""
    event = msgspec.defstruct("_LiteralEvent", [
        ("ph", Literal[phs], "?"),
        ("name", Literal[names], ""),
        ("ts", float, float("nan")),
        ("pid", int, -1),
        ("args", _Args | None, None),
    ], gc=False)
    return msgspec.json.Decoder(list[event]).decode  # type: ignore[valid-type]


class Codes(dict[str, int]):
    """str -> dense int code, assigned on first sight (None -> -1, never stored)."""

    def __missing__(self, key: str | None) -> int:
        if key is None:
            return -1
        code = self[key] = len(self)
        return code

    def labels(self) -> list[str]:
        return list(self)


@dataclass
class Columns:
    """Decoded events as columns, in file order, plus what was learnt about the framing."""

    ph: list[np.ndarray] = field(default_factory=list)      # uint8: ord of the ph letter
    name: list[np.ndarray] = field(default_factory=list)    # int32 codes into names
    ts: list[np.ndarray] = field(default_factory=list)      # float64, NaN when absent
    pid: list[np.ndarray] = field(default_factory=list)     # int, -1 when absent
    names: Codes = field(default_factory=Codes)
    dtypes: Codes = field(default_factory=Codes)
    shapes: Codes = field(default_factory=Codes)
    arg_idx: list[np.ndarray] = field(default_factory=list)    # event index of an E with args
    arg_dtype: list[np.ndarray] = field(default_factory=list)  # codes, -1 when absent
    arg_shape: list[np.ndarray] = field(default_factory=list)
    meta: list[tuple[int, str | None, float | None]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    events: int = 0
    newlines: int = 0
    closed: bool = False     # the array ends with ']'
    torn: bool = False       # the last record was cut
    bad_records: int = 0
    bad_times: int = 0       # records kept without their out-of-range time
    dup_keys: int = 0        # duplicate keys found (see the module docstring)

    def add(self, evs: list[Any]) -> None:
        """Append one block's events; raises OutOfRange (appending nothing) when a pid,
        a ts or a start time is out of range."""
        n = len(evs)
        if not n:
            return
        ts = np.fromiter(map(_TS, evs), np.float64, n)
        if np.fmin.reduce(ts) < 0 or np.fmax.reduce(ts) >= TS_LIMIT:   # NaN: no time
            raise OutOfRange("a timestamp out of range")
        try:
            pid = np.fromiter(map(_PID, evs), np.int64, n)
        except OverflowError:
            raise OutOfRange("a pid beyond int64") from None
        args = list(map(_ARGS, evs))
        have = list(compress(range(self.events, self.events + n), args))
        given = list(filter(None, args))
        starts = list(map(_START, given))
        if starts.count(None) < len(starts) and any(
                not 0 <= st < TS_LIMIT for st in starts if st is not None):
            raise OutOfRange("a start time out of range")
        self.ph.append(_ph_codes(evs))
        self.name.append(np.fromiter(map(self.names.__getitem__, map(_NAME, evs)),
                                     np.int32, n))
        self.ts.append(ts)
        if pid.min() >= -(1 << 31) and pid.max() < (1 << 31):
            pid = pid.astype(np.int32)
        self.pid.append(pid)
        if have:
            self._add_args(have, given, starts)
        self.events += n

    def _add_args(self, idx: list[int], args: list[Any], starts: list[float | None]) -> None:
        """dtype and shape as codes, for every record with args; names and start times
        (metadata records, a few per tensor) as tuples."""
        k = len(idx)
        self.arg_idx.append(np.array(idx, np.int64))
        self.arg_dtype.append(np.fromiter(map(self.dtypes.__getitem__, map(_DTYPE, args)),
                                          np.int32, k))
        self.arg_shape.append(np.fromiter(map(self.shapes.__getitem__, map(_SHAPE, args)),
                                          np.int32, k))
        names = list(map(_ANAME, args))
        self.meta.extend((i, nm, st) for i, nm, st in zip(idx, names, starts, strict=True)
                         if nm is not None or st is not None)

    def problem(self, source: str, message: str, line: int | None,
                severity: str = "error") -> None:
        self.problems.append(Problem(source, message, line, severity))

    def sample_dups(self, data: bytes | bytearray, start: int, end: int, n: int) -> int:
        """Duplicate keys in ``data[start:end]``, which holds the first ``n`` events of the
        last block added: each key's occurrences beyond the events that have that field."""
        if not self.ts or n > len(self.ts[-1]):
            return 0
        ph, ts, pid, name = (c[-1][:n] for c in (self.ph, self.ts, self.pid, self.name))
        have = ((_DUP_KEYS[0], int((ph != ord("?")).sum())),
                (_DUP_KEYS[1], int((~np.isnan(ts)).sum())),
                (_DUP_KEYS[2], int((pid != -1).sum())))
        dups = sum(max(0, data.count(key, start, end) - k) for key, k in have)
        empty = self.names.get("")
        named = n - (int((name == empty).sum()) if empty is not None else 0)
        base = self.events - len(self.ts[-1])
        arg_names = 0
        for idx, nm, _ in reversed(self.meta):
            if idx < base:
                break
            arg_names += idx < base + n and nm is not None
        names = data.count(_NAME_KEY, start, end) - data.count(_EMPTY_NAME, start, end)
        return dups + max(0, names - named - arg_names)


def _record_dups(record: bytes, ev: Any) -> int:
    """Duplicate keys in one record (``name`` may appear twice: the event's and its args')."""
    n = sum(record.count(key) > 1 for key in _DUP_KEYS)
    own = 1 + (ev.args is not None and ev.args.name is not None)
    return n + (record.count(_NAME_KEY) > own)


def _ph_codes(evs: list[_Event]) -> np.ndarray:
    """The ph letters as bytes; anything but one character becomes '?'."""
    joined = "".join(map(_PH, evs))
    if len(joined) != len(evs):
        joined = "".join(p if len(p) == 1 else "?" for p in map(_PH, evs))
    return np.frombuffer(joined.encode("latin-1", "replace"), np.uint8).copy()


def decode_stream(fh: IO[bytes], source: str, rng: Range) -> Columns:
    """Decode the events of ``rng`` read from ``fh`` (positioned at ``rng.start``)."""
    cols = Columns()
    with _chrome.paused_gc():
        _Scanner(fh, source, rng, cols).run()
    return cols


class _Scanner(_chrome.BlockScanner):
    """The container's blocks decoded as Horovod events into :class:`Columns`."""

    def __init__(self, fh: IO[bytes], source: str, rng: Range, cols: Columns) -> None:
        super().__init__(fh, source, rng, cols)
        self.block = min(self.block, BLOCK)
        self.cols = cols
        self.vocab = _Vocab(*rng.seed) if rng.seed else _Vocab()
        self.sample = rng.first   # check the file's first records for duplicate keys

    def decode_block(self, data: Any) -> None:
        self.cols.add(self.vocab.decode(data))

    def decode_list(self, data: bytes) -> None:
        self.cols.add(_DECODE_MANY(data))

    def decoded_block(self, buf: bytearray, cut: int) -> None:
        if self.sample:
            self._sample_dups(buf, cut)

    def _sample_dups(self, buf: bytearray, cut: int) -> None:
        """Count duplicate keys in the records of the first :data:`DUP_SAMPLE` bytes of a
        block that decoded whole (``buf[1:cut]``; its ``},`` end records)."""
        self.sample = False
        end = buf.rfind(b"},", 1, min(cut, 1 + DUP_SAMPLE))
        end = cut - 1 if end < 0 else end
        n = buf.count(b"},", 1, end) + 1
        self.cols.dup_keys += self.cols.sample_dups(buf, 1, end + 1, n)

    def record_decoded(self, record: bytes, event: Any) -> None:
        self.cols.dup_keys += _record_dups(record, event)

    def add_records(self, events: list[Any]) -> None:
        self.cols.add(events)

    def validated(self, piece: bytes, start: int, record: bytes) -> Any:
        """Decode one record; one whose times are out of range is kept without them."""
        try:
            return _DECODE_ONE(record)
        except msgspec.ValidationError:
            ev = self._lax_record(piece, start, record)
            if ev is None:
                raise
            return ev

    def _lax_record(self, piece: bytes, start: int, record: bytes) -> Any:
        """A record that failed validation, kept without its out-of-range times; None when
        something else was wrong with it."""
        try:
            ev = _DECODE_LAX(record)
        except _chrome.DECODE_ERRORS:
            return None
        bad = []
        if not 0 <= ev.ts < TS_LIMIT:
            bad.append(f"timestamp {ev.ts:.16g}")
            ev.ts = float("nan")
        args = ev.args
        st = args.start_time_since_epoch_in_micros if args is not None else None
        if args is not None and st is not None and not 0 <= st < TS_LIMIT:
            bad.append(f"start_time_since_epoch_in_micros {st:.16g}")
            args.start_time_since_epoch_in_micros = None
        if not bad:
            return None
        cols = self.cols
        cols.bad_times += 1
        if cols.bad_times <= MAX_PROBLEMS:
            cols.problem(self.source, f"{' and '.join(bad)} at byte {self.pos + start:,} is "
                         "out of range (Horovod writes microseconds since the timeline "
                         "started, 0 to 2^63): the record is kept without it",
                         self.line(piece, start))
        return ev


# -- whole files, in parallel when large --------------------------------------------------------

def _seed(head: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """The vocabulary of a file's first records, for its other ranges."""
    return _Vocab.of_head(head).seed()


def split_ranges(path: str, size: int, parts: int) -> list[Range]:
    """:func:`_chrome.split_ranges` with the vocabulary of the file's first records."""
    return _chrome.split_ranges(path, size, parts, _seed)


def decode_file(path: str, source: str, size: int,
                opener: Callable[[], IO[bytes]] | None = None,
                executor: Executor | None = None) -> list[Columns]:
    """Decode a whole input into one ``Columns`` per range, in file order
    (:func:`_chrome.decode_file`: one pass over a stream, ranges on the executor's workers
    when large)."""
    return _chrome.decode_file(path, source, size, decode_stream, opener, _seed, executor)


def merge(parts: list[Columns]) -> Columns:
    """One ``Columns`` from consecutive ranges: codes remapped, indices and lines shifted."""
    if len(parts) == 1:
        return parts[0]
    out = Columns()
    for part in parts:
        _append(out, part)
    return out


def _append(out: Columns, part: Columns) -> None:
    remap = _remap(out.names, part.names)
    out.ph.extend(part.ph)
    out.name.extend(remap[a] for a in part.name)
    out.ts.extend(part.ts)
    out.pid.extend(part.pid)
    dt, sh = _remap(out.dtypes, part.dtypes), _remap(out.shapes, part.shapes)
    out.arg_idx.extend(a + out.events for a in part.arg_idx)
    out.arg_dtype.extend(np.where(a >= 0, dt[np.maximum(a, 0)], -1) for a in part.arg_dtype)
    out.arg_shape.extend(np.where(a >= 0, sh[np.maximum(a, 0)], -1) for a in part.arg_shape)
    out.meta.extend((i + out.events, n, s) for i, n, s in part.meta)
    out.problems.extend(_chrome.shift_problems(part.problems, out.newlines))
    out.events += part.events
    out.newlines += part.newlines
    out.closed, out.torn = part.closed, out.torn or part.torn
    out.bad_records += part.bad_records
    out.bad_times += part.bad_times
    out.dup_keys += part.dup_keys


def _remap(into: Codes, codes: Codes) -> np.ndarray:
    return np.array([into[k] for k in codes] or [0], dtype=np.int32)


def concat(chunks: list[np.ndarray], dtype: Any) -> np.ndarray:
    """Concatenate column chunks (an empty column when there are none)."""
    return np.concatenate(chunks) if chunks else np.empty(0, dtype=dtype)


def take_all(chunks: list[np.ndarray], dtype: Any) -> np.ndarray:
    """Concatenate ``chunks`` while emptying the list, so that at most one chunk is held
    beside the result (a plain concatenate holds all of them twice)."""
    kind = np.result_type(*chunks) if chunks else np.dtype(dtype)
    out = np.empty(sum(len(c) for c in chunks), dtype=kind)
    at = 0
    chunks.reverse()
    while chunks:
        part = chunks.pop()
        out[at:at + len(part)] = part
        at += len(part)
    return out
