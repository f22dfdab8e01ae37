"""Streaming decoder of Horovod timelines: bytes in bounded blocks -> numpy event columns.

A timeline is a JSON array of Chrome trace events, but its framing varies (see
:mod:`dptrace.parsers.horovod`): one event per line or thousands per line, a closing
``]`` or none, a trailing ``,``, or a record torn by a killed job. So the file is never
handed to a JSON parser whole. It is read in blocks of :data:`BLOCK` bytes; each block
is cut after its last complete event (the last ``},``: Horovod writes no ``},`` inside
a record), wrapped in ``[`` ``]`` and decoded by msgspec into small structs that name
only the fields used (``ph``, ``name``, ``ts``, ``pid``, ``args``). Their fields go
straight into numpy columns, names as integer codes; the structs are dropped with the
block. The garbage collector is paused meanwhile (the structs hold no cycles).

A block that does not decode is retried after replacing invalid UTF-8 and then record
by record, so one bad record costs only itself; the problems name the byte offset and
line. Plain files of :data:`PARALLEL_BYTES` or more are split into :data:`WORKERS`
byte ranges at event boundaries and decoded by forked processes.

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
import gc
import lzma
import multiprocessing as mp
import os
import re
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import IO, Annotated, Any, Literal

import msgspec
import numpy as np

from ..errors import Problem

#: bytes read per block (the decoded structs of one block live at a time)
BLOCK = 16 << 20
#: plain files at least this large are decoded by WORKERS processes, one byte range each
PARALLEL_BYTES = 96 << 20
WORKERS = min(2, os.cpu_count() or 1)
#: size of the byte ranges a large file is cut into (see range_count)
RANGE_BYTES = 64 << 20
#: problems reported one by one before the rest are only counted
MAX_PROBLEMS = 20
#: bytes at the head of a file whose records are checked for duplicate keys
DUP_SAMPLE = 1 << 20
_RECORD_END = re.compile(rb"\}\s*,?\s*(?=\{)")
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
            with contextlib.suppress(msgspec.DecodeError, UnicodeDecodeError):
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


@dataclass
class Range:
    """A byte range of the input: ``first`` holds the opening '[', ``last`` the end."""

    start: int
    end: int | None
    first: bool
    last: bool
    words: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # ph, name


def decode_stream(fh: IO[bytes], source: str, rng: Range) -> Columns:
    """Decode the events of ``rng`` read from ``fh`` (positioned at ``rng.start``)."""
    cols = Columns()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _Scanner(fh, source, rng, cols).run()
    finally:
        if was_enabled:
            gc.enable()
    return cols


class _Scanner:
    """Reads blocks, cuts them after the last complete event, decodes, tracks position.

    The buffer always starts with ``[``; the ``,`` after the last complete event is
    overwritten with ``]`` and the prefix is decoded in place (no copy of the block).
    """

    def __init__(self, fh: IO[bytes], source: str, rng: Range, cols: Columns) -> None:
        self.fh, self.source, self.rng, self.cols = fh, source, rng, cols
        self.pos = rng.start          # absolute offset of buf[1]
        self.left = None if rng.end is None else rng.end - rng.start
        self.vocab = _Vocab(*rng.words)
        self.sample = rng.first   # check the file's first records for duplicate keys

    def run(self) -> None:
        buf = bytearray(b"[")
        first = self.rng.first
        for chunk in self._chunks():
            if first:
                chunk = self._skip_opening(chunk)
                first = not chunk
            buf += chunk
            i = buf.rfind(b"},")
            if i > 0:
                buf = self._decode_prefix(buf, i + 1)
            elif len(buf) > 2 * BLOCK:  # no Horovod separator at all: record by record
                buf = self._records_prefix(buf)
        self._tail(bytes(buf[1:]))

    def _chunks(self) -> Iterator[bytes]:
        read = getattr(self.fh, "read1", self.fh.read) if self.left is None else self.fh.read
        parts: list[bytes] = []
        size = 0
        while self.left is None or self.left > 0:
            want = (1 << 20) if self.left is None else min(BLOCK, self.left)
            piece = self._read(read, want)
            if not piece:
                break
            if self.left is not None:
                self.left -= len(piece)
            parts.append(piece)
            size += len(piece)
            if size >= BLOCK or self.left is not None:
                yield b"".join(parts)
                parts, size = [], 0
        if parts:
            yield b"".join(parts)

    def _read(self, read: Callable[[int], bytes], want: int) -> bytes:
        """One read; a damaged compressed stream ends the input with a problem."""
        try:
            return read(want)
        except (EOFError, OSError, ValueError, lzma.LZMAError, zlib.error) as exc:
            self.cols.problem(self.source, f"compressed stream is truncated or corrupt ({exc}); "
                              "parsed what was decompressed before the damage", None)
            self.left = 0
            return b""

    def _skip_opening(self, data: bytes) -> bytes:
        """Drop a BOM, leading whitespace and the array's '['."""
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        body = body.lstrip()
        if body[:1] == b"[":
            body = body[1:]
            extra, first = 0, 0
            while body.lstrip()[:1] == b"[":     # records start with '{': a repeated '['
                body = body.lstrip()
                first = first or len(data) - len(body)
                body, extra = body[1:], extra + 1
            if extra:
                self.cols.problem(self.source, f"{extra} extra '[' at the start of the array: "
                                  "ignored", data.count(b"\n", 0, first) + 1, "warning")
        self._consume(data[:len(data) - len(body)])
        return body

    def _consume(self, part: bytes | bytearray, start: int = 0, end: int | None = None) -> None:
        end = len(part) if end is None else end
        self.pos += end - start
        self.cols.newlines += part.count(b"\n", start, end)

    def _decode_prefix(self, buf: bytearray, cut: int) -> bytearray:
        """Decode ``buf[1:cut]`` (complete events; ``buf[cut]`` is their ','), keep the rest."""
        buf[cut] = 0x5D  # ']'
        view = memoryview(buf)[:cut + 1]
        try:
            self.cols.add(self.vocab.decode(view))
        except (msgspec.DecodeError, UnicodeDecodeError):
            view.release()
            self._decode_slow(bytes(buf[1:cut]))
        else:
            if self.sample:
                self._sample_dups(buf, cut)
        finally:
            view.release()
        self._consume(buf, 1, cut + 1)
        return bytearray(b"[") + buf[cut + 1:]

    def _sample_dups(self, buf: bytearray, cut: int) -> None:
        """Count duplicate keys in the records of the first :data:`DUP_SAMPLE` bytes of a
        block that decoded whole (``buf[1:cut]``; its ``},`` end records)."""
        self.sample = False
        end = buf.rfind(b"},", 1, min(cut, 1 + DUP_SAMPLE))
        end = cut - 1 if end < 0 else end
        n = buf.count(b"},", 1, end) + 1
        self.cols.dup_keys += self.cols.sample_dups(buf, 1, end + 1, n)

    def _records_prefix(self, buf: bytearray) -> bytearray:
        """Decode the complete records in ``buf`` one by one; keep the rest."""
        data = bytes(buf[1:])
        ends = [m.start() + 1 for m in _RECORD_END.finditer(data)]
        if not ends:
            return buf
        self._decode_records(data[:ends[-1]], final=False)
        self._consume(data, 0, ends[-1])
        return bytearray(b"[") + data[ends[-1]:]

    def _line(self, offset_in: bytes, upto: int) -> int:
        return self.cols.newlines + offset_in.count(b"\n", 0, upto) + 1

    def _decode(self, piece: bytes) -> None:
        try:
            self.cols.add(_DECODE_MANY(b"[" + piece + b"]"))
        except (msgspec.DecodeError, UnicodeDecodeError):
            self._decode_slow(piece)

    def _decode_slow(self, piece: bytes) -> None:
        """After a failed block: replace invalid UTF-8 and retry, then go record by record."""
        piece = self._fix_utf8(piece)
        try:
            self.cols.add(_DECODE_MANY(b"[" + piece + b"]"))
        except (msgspec.DecodeError, UnicodeDecodeError):
            self._decode_records(piece, final=False)

    def _fix_utf8(self, piece: bytes) -> bytes:
        try:
            piece.decode("utf-8")
            return piece
        except UnicodeDecodeError as exc:
            self.cols.problem(
                self.source, f"invalid UTF-8 at byte {self.pos + exc.start:,}: replaced by "
                "U+FFFD (a tensor name with non-UTF-8 bytes?)", self._line(piece, exc.start),
                "warning")
            return piece.decode("utf-8", "replace").encode("utf-8")

    def _decode_records(self, piece: bytes, final: bool) -> None:
        """Slow path: split at record boundaries, keep the records that decode."""
        good: list[_Event] = []
        starts = [0] + [m.end() for m in _RECORD_END.finditer(piece)]
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(piece)
            record = piece[start:end].rstrip().rstrip(b",")
            if not record.strip():
                continue
            ev = self._record(piece, start, record, final and k == len(starts) - 1)
            if ev is not None:
                self.cols.dup_keys += _record_dups(record, ev)
                good.append(ev)
        self.cols.add(good)

    def _record(self, piece: bytes, start: int, record: bytes, last: bool) -> Any:
        """The event of one record, or None (reported). Stray bytes around an intact record
        (a flipped separator, a control character) cost only themselves."""
        try:
            return self._validated(piece, start, record)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            error: Exception = exc
        lo, hi = record.find(b"{"), record.rfind(b"}") + 1
        stray = len(record[:lo].strip()) + len(record[hi:].strip()) if 0 <= lo < hi else 0
        if stray:
            with contextlib.suppress(msgspec.DecodeError, UnicodeDecodeError):
                ev = self._validated(piece, start + lo, record[lo:hi])
                self.cols.problem(self.source, f"ignored {stray} stray byte(s) around the "
                                  f"record at byte {self.pos + start + lo:,}",
                                  self._line(piece, start + lo), "warning")
                return ev
        torn = last and (not record.endswith(b"}") or "truncated" in str(error))
        self._bad_record(piece, start, error, torn)
        return None

    def _validated(self, piece: bytes, start: int, record: bytes) -> Any:
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
        except msgspec.DecodeError:
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
                         self._line(piece, start))
        return ev

    def _bad_record(self, piece: bytes, start: int, exc: Exception, torn: bool) -> None:
        cols = self.cols
        where = f"byte {self.pos + start:,}"
        line = self._line(piece, start)
        if torn:
            cols.torn = True
            cols.problem(self.source, f"the file ends inside a record at {where}: the job was "
                         "probably killed while writing the timeline; the events before it "
                         "were kept", line)
            return
        cols.bad_records += 1
        if cols.bad_records <= MAX_PROBLEMS:
            why = str(exc)
            if "`$.pid`" in why and ("<=" in why or ">=" in why):
                why = "its pid does not fit a 64-bit integer"
            cols.problem(self.source, f"skipped a malformed record at {where}: {why}", line)

    def _tail(self, carry: bytes) -> None:
        """The bytes after the last separator: the end of the array or a last record."""
        if not self.rng.last:
            if carry.strip():
                self._decode(carry)
            return
        body = carry.rstrip()
        if body.endswith(b"]"):
            self.cols.closed = True
            body = body[:-1].rstrip()
            extra = 0
            while body.endswith(b"]"):          # records end with '}': a repeated ']'
                body, extra = body[:-1].rstrip(), extra + 1
            if extra:
                self.cols.problem(self.source, f"{extra} extra ']' after the end of the "
                                  "array: ignored", self._line(carry, len(carry.rstrip()) - 1),
                                  "warning")
        body = body.rstrip(b",").rstrip()
        if not body:
            return
        try:
            self.cols.add(_DECODE_MANY(b"[" + body + b"]"))
        except (msgspec.DecodeError, UnicodeDecodeError):
            self._decode_records(self._fix_utf8(body), final=True)


# -- whole files, in parallel when large --------------------------------------------------------

def split_ranges(path: str, size: int, parts: int) -> list[Range]:
    """Cut ``path`` into up to ``parts`` byte ranges, each starting just after a ``},``;
    they carry the vocabulary of the file's first records."""
    cuts = [0]
    with open(path, "rb") as fh:
        words = _Vocab.of_head(fh.read(1 << 20)).seed()
        for k in range(1, parts):
            fh.seek(max(size * k // parts, cuts[-1]))
            window = fh.read(1 << 20)
            i = window.find(b"},")
            if i < 0:
                continue
            cut = fh.tell() - len(window) + i + 2
            if cut < size:
                cuts.append(cut)
    cuts.append(size)
    n = len(cuts) - 1
    return [Range(cuts[k], cuts[k + 1], k == 0, k == n - 1, words) for k in range(n)]


def _decode_range(args: tuple[str, str, Range]) -> Columns:
    path, source, rng = args
    with open(path, "rb") as fh:
        fh.seek(rng.start)
        return decode_stream(fh, source, rng)


def range_count(size: int) -> int:
    """How many byte ranges a plain file is decoded in: 1 below :data:`PARALLEL_BYTES`,
    else about :data:`RANGE_BYTES` each and at least 4 per worker, so that a worker
    slowed down by other processes on the machine takes fewer of them."""
    if size < PARALLEL_BYTES or WORKERS < 2 or "fork" not in mp.get_all_start_methods():
        return 1
    return max(4 * WORKERS, -(-size // RANGE_BYTES))


def decode_file(path: str, source: str, size: int,
                opener: Callable[[], IO[bytes]] | None = None) -> list[Columns]:
    """Decode a whole input into one ``Columns`` per range, in file order.

    ``opener`` (a decompressing stream) forces one sequential pass; a plain file of
    :data:`PARALLEL_BYTES` or more is cut into :func:`range_count` ranges, decoded by
    :data:`WORKERS` forked processes.
    """
    if opener is not None:
        with opener() as fh:
            return [decode_stream(fh, source, Range(0, None, True, True))]
    parts = range_count(size)
    ranges = split_ranges(path, size, parts) if parts > 1 else [Range(0, size, True, True)]
    jobs = [(path, source, r) for r in ranges]
    if len(jobs) == 1:
        return [_decode_range(jobs[0])]
    with ProcessPoolExecutor(WORKERS, mp_context=mp.get_context("fork")) as pool:
        return list(pool.map(_decode_range, jobs))


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
    out.problems.extend(Problem(p.source, p.message, None if p.line is None else
                                p.line + out.newlines, p.severity) for p in part.problems)
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
