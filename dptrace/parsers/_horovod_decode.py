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
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import IO, Any, Literal

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
_RECORD_END = re.compile(rb"\}\s*,?\s*(?=\{)")


class _Args(msgspec.Struct, gc=False):
    name: str | None = None
    dtype: str | None = None
    shape: str | None = None
    start_time_since_epoch_in_micros: float | None = None


class _Event(msgspec.Struct, gc=False):
    ph: str = "?"
    name: str = ""
    ts: float = float("nan")
    pid: int = -1
    args: _Args | None = None


_DECODE_MANY = msgspec.json.Decoder(list[_Event]).decode
_DECODE_ONE = msgspec.json.Decoder(_Event).decode
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
                self.misses += 1
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

    def add(self, evs: list[_Event]) -> None:
        """Append one block's events."""
        n = len(evs)
        if not n:
            return
        self.ph.append(_ph_codes(evs))
        self.name.append(np.fromiter(map(self.names.__getitem__, map(_NAME, evs)),
                                     np.int32, n))
        self.ts.append(np.fromiter(map(_TS, evs), np.float64, n))
        pid = np.fromiter(map(_PID, evs), np.int64, n)
        if pid.size and pid.min() >= -(1 << 31) and pid.max() < (1 << 31):
            pid = pid.astype(np.int32)
        self.pid.append(pid)
        args = list(map(_ARGS, evs))
        have = list(compress(range(self.events, self.events + n), args))
        if have:
            self._add_args(have, list(filter(None, args)))
        self.events += n

    def _add_args(self, idx: list[int], args: list[_Args]) -> None:
        """dtype and shape as codes, for every record with args; names and start times
        (metadata records, a few per tensor) as tuples."""
        k = len(idx)
        self.arg_idx.append(np.array(idx, np.int64))
        self.arg_dtype.append(np.fromiter(map(self.dtypes.__getitem__, map(_DTYPE, args)),
                                          np.int32, k))
        self.arg_shape.append(np.fromiter(map(self.shapes.__getitem__, map(_SHAPE, args)),
                                          np.int32, k))
        names, starts = list(map(_ANAME, args)), list(map(_START, args))
        self.meta.extend((i, nm, st) for i, nm, st in zip(idx, names, starts, strict=True)
                         if nm is not None or st is not None)

    def problem(self, source: str, message: str, line: int | None,
                severity: str = "error") -> None:
        self.problems.append(Problem(source, message, line, severity))


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
        except (EOFError, OSError, ValueError) as exc:  # zlib/lzma errors derive from these
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
        finally:
            view.release()
        self._consume(buf, 1, cut + 1)
        return bytearray(b"[") + buf[cut + 1:]

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
            try:
                good.append(_DECODE_ONE(record))
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:
                torn = final and k == len(starts) - 1 and (
                    not record.endswith(b"}") or "truncated" in str(exc))
                self._bad_record(piece, start, exc, torn)
        self.cols.add(good)

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
            cols.problem(self.source, f"skipped a malformed record at {where}: {exc}", line)

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
