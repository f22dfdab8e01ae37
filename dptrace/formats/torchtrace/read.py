"""PyTorch profiler (Kineto) traces: ``torch_events`` and ``torch_traces`` of one trace file.

A trace is a JSON object: metadata keys (``schemaVersion``, ``deviceProperties``,
``distributedInfo``, ...) before and after one ``traceEvents`` array. The metadata before
the array is read from the first bytes; the array is handed to the shared streaming
decoder (:mod:`dptrace.formats._chrome`, in blocks, a bad record costing only itself)
through :class:`_EventsStream`, which ends the stream at the array's ``]`` and keeps what
follows (the trailing metadata: ``traceName``, and ``distributedInfo`` in some writers).

The array's end is found as ``}`` ``]`` followed by ``, "key"`` (more metadata) or by the
object's last ``}``, outside any string (the quotes before it are counted as the bytes
pass: a kernel name may hold anything): Kineto's events hold no list of objects, so an
event never holds that sequence. The events are cut into blocks wherever a record ends by
the JSON's structure, never inside a string or a nested ``args`` (:mod:`.._chrome`), so a
valid trace reads whole whatever its size. A file that ends inside the array (a job killed
while the profiler wrote) is read up to its last whole event and flagged with a problem
naming the file.

What each event is to the breakdown (``role``) follows HolisticTraceAnalysis: a GPU kernel
whose name holds ``nccl`` is communication, memcpy/memset are memory, other kernels are
compute. A trace without GPU kernels (CPU training with gloo) has its collectives'
work only in the backend's annotations (``gloo:all_reduce`` on the backend's thread): those
are its communication, the CPU ops its computation.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import time
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any

import msgspec
import numpy as np
import pandas as pd

from ... import schema
from ...errors import Problem
from ...numbers import (
    INT64_MAX,
    INT64_MIN,
    INT_PATTERN,
    NumberError,
    check_float,
    check_int,
    parse_count,
    parse_float,
    parse_int,
)
from ...registry import CRASH, ParseResult, SourceReport
from ...sources import Source
from .. import _chrome
from .._problems import explain_cut
from .tables import TORCH_EVENTS, TORCH_TRACES

#: the start of the events array, searched for in the first :data:`MAX_PREFIX` bytes
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
MAX_PREFIX = 64 << 20
#: the end of the events array: an event's '}', ']', then more metadata
_END_MORE = re.compile(rb'\}\s*\]\s*,\s*"')
#: ... or the end of the object
_END_LAST = re.compile(rb'\}\s*\]\s*\}\s*\Z')
#: an empty events array
_EMPTY = re.compile(rb"\[\s*\]")
#: bytes kept back when searching a block for the end (a match may straddle two reads)
_KEEP = 256
#: trailing metadata read at most (Kineto writes a few KB of INFO lines)
MAX_TRAILER = 16 << 20
#: problems named one by one
MAX_PROBLEMS = _chrome.MAX_PROBLEMS

_COLLECTIVES = (("reducescatter", "reduce_scatter"), ("allreduce", "all_reduce"),
                ("allgather", "all_gather"), ("alltoall", "all_to_all"),
                ("broadcast", "broadcast"), ("sendrecv", "send_recv"), ("barrier", "barrier"),
                ("reduce", "reduce"), ("gather", "gather"), ("scatter", "scatter"),
                ("send", "send"), ("recv", "recv"))
#: a collective's kernel: ncclKernel_AllReduce_RING_LL_Sum_float(...), ncclDevKernel_...
_NCCL_KERNEL = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")
#: a backend's annotation of a collective: nccl:all_reduce, gloo:all_reduce, xccl:...
_BACKEND = re.compile(r"^(?:nccl|gloo|xccl|mpi|ucc|hccl):(\w+)")
#: the c10d op that enqueues one: c10d::allreduce_, c10d::_allgather_base_
_C10D = re.compile(r"^c10d::(\w+)")
#: a ProfilerStep#N name (N read by :func:`_step_number`: digits of any script match here)
_STEP = re.compile(r"^ProfilerStep#([-+]?\d\w*)$")
#: times are microseconds of the profiler's clock, int64 nanoseconds: |ts| and dur below
TIME_LIMIT_US = 2.0 ** 63 / 1000
#: c10d holds a rank and a world size as a C int
MAX_WORLD = 2 ** 31 - 1
_DTYPE_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2,
                "float16": 2, "bfloat16": 2, "c10::half": 2, "c10::bfloat16": 2, "int": 4,
                "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "int8": 1,
                "char": 1, "uint8": 1, "byte": 1, "bool": 1, "unsigned char": 1,
                "signed char": 1, "long int": 8, "complexfloat": 8, "complexdouble": 16}
#: categories of device events
_DEVICE_CATS = {"kernel": "compute", "gpu_memcpy": "memory", "gpu_memset": "memory",
                "gpu_user_annotation": "annotation"}
#: categories left out (Python stack frames, the profiler's own spans and flows)
_SKIP_CATS = {"python_function", "trace", "ac2g", "fwdbwd", "async_cpu_to_gpu"}


class _Args(msgspec.Struct, gc=False):
    stream: Any = None
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")
    nelems: Any = msgspec.field(default=None, name="In msg nelems")
    dtype: Any = None
    collective: Any = msgspec.field(default=None, name="Collective name")


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args | None = None


_DECODE_MANY = msgspec.json.Decoder(list[_Event]).decode
_DECODE_ONE = msgspec.json.Decoder(_Event).decode


class _Out:
    """What the container reader updates (:class:`dptrace.formats._chrome.Sink`), and the
    events kept, as columns: each decoded block is reduced at once to compact arrays (names
    and categories interned as codes), so a trace of GBs never holds its events as objects
    all at once."""

    def __init__(self) -> None:
        self.newlines = 0
        self.closed = False
        self.torn = False
        self.bad_records = 0
        self.problems: list[Problem] = []
        self.kept = 0
        self.cats: dict[str, int] = {}
        self.names: dict[str, int] = {}
        self.cat_ok: dict[str, bool] = {}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in (
            "cat", "name", "pid", "tid", "ts", "dur", "stream")}
        #: (row, args) of the events that may be collectives (see :func:`_maybe_comm`)
        self.comm_args: list[tuple[int, _Args | None]] = []
        self.maybe_comm: dict[tuple[int, int], bool] = {}
        self.bad_values = 0                     # values named (up to MAX_PROBLEMS) or counted
        self.more_lines: tuple[int, int] | None = None

    def problem(self, source: str, message: str, line: int | None,
                severity: str = "error") -> None:
        message = message.replace("writing the timeline", "writing the trace")
        self.problems.append(Problem(source, message, line, severity))

    def _cat_ok(self, cat: str) -> bool:
        ok = self.cat_ok.get(cat)
        if ok is None:
            ok = self.cat_ok[cat] = cat.lower() not in _SKIP_CATS
        return ok

    def add(self, evs: list[_Event], strict: bool = True) -> None:
        """Keep the events of one block (``strict``) or of records read one by one (their
        values already checked by :meth:`checked`). A block holding a value that is not a
        number of its column (:func:`_int_field`, :func:`_time_field`, a ProfilerStep#N
        whose N is not a count, an args count) raises :class:`_BadValue`, keeping
        nothing: the container then reads it record by record, each record through
        :meth:`checked`, so each bad value is named with its byte and line."""
        ok = self._cat_ok
        keep = [e for e in evs if e.ph == "X" and type(e.cat) is str and type(e.name) is str
                and ok(e.cat) and (type(e.pid) is int or _int_field(e.pid) is not None)]
        if not keep:
            return
        pid, bad = _int64s([e.pid for e in keep])
        tid, bad_tid = _int64s([e.tid for e in keep])
        ts, bad_ts = _float64s([e.ts for e in keep], -TIME_LIMIT_US)
        dur, bad_dur = _float64s([e.dur for e in keep], 0.0)
        bad = bad or bad_tid or bad_ts or bad_dur
        cats, names = self.cats, self.names
        n_cats, n_names = len(cats), len(names)
        cat_text = [e.cat for e in keep]
        cat = [cats[c] if c in cats else cats.setdefault(c, len(cats)) for c in cat_text]
        name = [names[n] if n in names else names.setdefault(n, len(names))
                for n in [e.name for e in keep]]
        if len(names) > n_names:          # a new ProfilerStep#N whose N is not a count
            bad = bad or any(isinstance(_step_number(n), NumberError)
                             for n in itertools.islice(names, n_names, None))
        device = np.array([c in _DEVICE_CATS for c in cat_text], dtype=bool)
        stream = np.full(len(keep), _NULL, dtype="int64")
        for i in np.flatnonzero(device).tolist():
            args = keep[i].args
            s = _int_field(args.stream) if args is not None else None
            bad = bad or isinstance(s, NumberError)
            stream[i] = s if isinstance(s, int) else tid[i]
        seen, base = self.maybe_comm, self.kept
        comm: list[tuple[int, _Args | None]] = []
        for i, key in enumerate(zip(cat, name, strict=True)):
            m = seen.get(key)
            if m is None:
                e = keep[i]
                m = seen[key] = _maybe_comm(e.cat, e.name)
            if m:
                args = keep[i].args
                bad = bad or (args is not None and isinstance(_count_field(args.nelems),
                                                              NumberError))
                comm.append((base + i, args))
        if bad and strict:
            _forget(cats, n_cats)
            _forget(names, n_names)
            raise _BadValue("a value that is not a number of its column")
        tid[device] = _NULL
        pid[~device] = _NULL
        parts = self.parts
        parts["cat"].append(np.array(cat, dtype="int32"))
        parts["name"].append(np.array(name, dtype="int32"))
        parts["pid"].append(pid)
        parts["tid"].append(tid)
        parts["stream"].append(stream)
        parts["ts"].append(ts)
        parts["dur"].append(dur)
        self.comm_args.extend(comm)
        self.kept += len(keep)

    def checked(self, ev: _Event, source: str, at: Callable[[], tuple[int, int]]
                ) -> _Event | None:
        """One record's event with each value that is not a number of its column named
        (file, byte and line: ``at()``, asked only then) and made missing; None (the record
        skipped, named) when its pid is such a value: a process that cannot be told is no
        place for an event."""
        if not (ev.ph == "X" and type(ev.cat) is str and type(ev.name) is str
                and self._cat_ok(ev.cat)) or not self._suspect(ev):
            return ev                        # not kept (its values are not read), or sound
        said: list[tuple[str, str]] = []     # (what is wrong, what is lost)
        kept = "the event is kept, its value is missing"
        pid = _int_field(ev.pid)
        if isinstance(pid, NumberError):
            said.append((f"pid {pid}", "the record is skipped"))
        tid = _int_field(ev.tid)
        if isinstance(tid, NumberError):
            said.append((f"tid {tid}", kept))
            ev.tid = None
        for field, lo in (("ts", -TIME_LIMIT_US), ("dur", 0.0)):
            t = _time_field(getattr(ev, field), lo)
            if isinstance(t, NumberError):
                said.append((f"{field} {t}", kept))
                setattr(ev, field, None)
        step = _step_number(ev.name)
        if isinstance(step, NumberError):
            said.append((f"ProfilerStep# number {step}",
                         "the event is kept, not read as a step"))
        args = ev.args
        if args is not None:
            s = _int_field(args.stream)
            if isinstance(s, NumberError):
                said.append((f"args stream {s}", kept))
                args.stream = None
            k = _count_field(args.nelems)
            if isinstance(k, NumberError):
                said.append((f"args In msg nelems {k}", kept))
                args.nelems = None
        if said:
            offset, line = at()
            for what, lost in said[:1] if isinstance(pid, NumberError) else said:
                self.value_problem(source, f"{what} (the record at byte {offset:,}): {lost}",
                                   line)
        return None if isinstance(pid, NumberError) else ev

    @staticmethod
    def _suspect(ev: _Event) -> bool:
        """Whether a value of ``ev`` may not be a number of its column (cheap: the
        :meth:`checked` of most records ends here)."""
        if not (type(ev.pid) is int and type(ev.tid) is int and type(ev.ts) in (int, float)
                and type(ev.dur) in (int, float)):
            return True
        if not (INT64_MIN <= ev.pid <= INT64_MAX and INT64_MIN <= ev.tid <= INT64_MAX
                and -TIME_LIMIT_US <= ev.ts < TIME_LIMIT_US and 0 <= ev.dur < TIME_LIMIT_US):
            return True
        args = ev.args
        return ev.name.startswith("ProfilerStep#") or args is not None and (
            args.stream is not None or args.nelems is not None)

    def value_problem(self, source: str, message: str, line: int | None) -> None:
        """An error about a value, named one by one up to :data:`MAX_PROBLEMS`; the rest
        counted (:attr:`more_values`, lines :attr:`more_lines`)."""
        self.bad_values += 1
        if self.bad_values <= MAX_PROBLEMS:
            self.problem(source, message, line)
        elif line is not None:
            lo, hi = self.more_lines or (line, line)
            self.more_lines = (min(lo, line), max(hi, line))


def _forget(interned: dict[str, int], n: int) -> None:
    """Undo the codes given after the first ``n`` (the last ones, in order)."""
    while len(interned) > n:
        interned.popitem()


class _BadValue(msgspec.DecodeError):
    """A block holds a value that is not a number of its column: read it record by record."""


class _Scanner(_chrome.BlockScanner):
    """The container's blocks decoded as Kineto events."""

    def __init__(self, fh: IO[bytes], source: str, out: _Out, offset: int) -> None:
        super().__init__(fh, source, _chrome.Range(offset, None, True, True), out)
        self.kept = out

    def decode_block(self, data: Any) -> None:
        self.kept.add(_DECODE_MANY(data))

    def validated(self, piece: bytes, start: int, record: bytes) -> Any:
        return self.kept.checked(_DECODE_ONE(record), self.source,
                                 lambda: (self.pos + start, self.line(piece, start)))

    def add_records(self, events: list[Any]) -> None:
        self.kept.add(events, strict=False)


class _EventsStream:
    """The events array of a trace as a stream: ``[`` and the events, ended at the array's
    ``]``; what follows it is kept in :attr:`trailer`."""

    def __init__(self, fh: IO[bytes], first: bytes) -> None:
        self.fh = fh
        self.pending = bytearray(first)
        self.searched = 0
        self.done = False
        self.eof = False
        self.trailer = b""
        #: quotes counted in pending[:counted] and before it: odd when a string is open
        self.odd = 0
        self.counted = 0
        self.lead = 0          # backslashes at the end of what was handed out
        self.newlines = 0      # in what was handed out (the trailer's lines follow them)
        empty = _EMPTY.match(first)
        if empty:                               # "traceEvents": [] (nothing was recorded)
            self.pending = bytearray(first[:empty.end()])
            self.trailer = first[empty.end():] + fh.read(MAX_TRAILER)
            self.done = True

    def read(self, n: int = -1) -> bytes:
        want = n if n > 0 else 1 << 20
        while not self.done and not self.eof and len(self.pending) < want + _KEEP:
            chunk = self.fh.read(1 << 20)
            if not chunk:
                self.eof = True
            else:
                self.pending += chunk
        if not self.done:
            self._find_end()
        if self.done:
            out = bytes(self.pending[:want])
            del self.pending[:want]
            self.newlines += out.count(b"\n")
            return out
        give = min(want, len(self.pending) if self.eof else max(len(self.pending) - _KEEP, 0))
        out = bytes(self.pending[:give])
        self.newlines += out.count(b"\n")
        self._count_to(give)
        run = len(out) - len(out.rstrip(b"\\"))
        self.lead = run + self.lead if run == len(out) else run
        del self.pending[:give]
        self.counted -= give
        self.searched = max(self.searched - give, 0)
        return out

    def _count_to(self, i: int) -> None:
        if i > self.counted:
            self.odd ^= _chrome.quote_parity(self.pending, self.counted, i, self.lead)
            self.counted = i

    def _in_string(self, i: int) -> bool:
        """Whether ``pending[i]`` is inside a string (the quotes before it are odd)."""
        if i >= self.counted:
            self._count_to(i)
            return bool(self.odd)
        return bool(self.odd ^ _chrome.quote_parity(self.pending, i, self.counted, self.lead))

    read1 = read

    def _find_end(self) -> None:
        end = len(self.pending) if self.eof else len(self.pending) - _KEEP
        start = max(self.searched - _KEEP, 0)
        m = next((m for m in _END_MORE.finditer(self.pending, start, max(end, 0) + 8)
                  if not self._in_string(m.start())), None)
        if m is None and self.eof:
            m = _END_LAST.search(self.pending, start)
            m = None if m is None or self._in_string(m.start()) else m
        self.searched = max(end, 0)
        if m is None:
            return
        close = self.pending.index(b"]", m.start()) + 1
        rest = bytes(self.pending[close:])
        del self.pending[close:]
        self.done = True
        if not self.eof:
            rest += self.fh.read(MAX_TRAILER)
        self.trailer = rest


def _meta_before(prefix: bytes) -> tuple[dict[str, Any], str | None]:
    """The metadata keys before ``traceEvents`` (``{`` ... ``,``), as a dict, and why they
    did not decode whole (None when they did)."""
    body = prefix.strip().rstrip(b",").rstrip()
    body = body[3:] if body.startswith(b"\xef\xbb\xbf") else body
    try:
        meta = msgspec.json.decode(body + b"}")
    except RecursionError:
        return _meta_loose(prefix), _chrome.TOO_DEEP
    except (msgspec.DecodeError, UnicodeDecodeError) as e:   # invalid UTF-8: the latter
        return _meta_loose(prefix), str(e).split("\n")[0][:120]
    return (meta, None) if isinstance(meta, dict) else ({}, "not a JSON object")


def _meta_after(trailer: bytes) -> dict[str, Any]:
    """The metadata keys after the array (``, "traceName": ... }``), as a dict."""
    body = trailer.strip().lstrip(b",").strip()
    if not body:
        return {}
    try:
        meta = msgspec.json.decode(b"{" + body)
    except _chrome.DECODE_ERRORS:   # invalid UTF-8: UnicodeDecodeError; too deep: Recursion
        return _meta_loose(trailer)
    return meta if isinstance(meta, dict) else {}


_DIST = re.compile(rb'"distributedInfo"\s*:\s*\{')
#: bytes of distributedInfo tried at most (its pg_config lists every process group)
_DIST_MAX = 1 << 20


def _meta_loose(text: bytes) -> dict[str, Any]:
    """distributedInfo alone, from metadata that does not decode whole (a cut file, a bad
    byte elsewhere): the object from its ``{`` to the first ``}`` that closes it (each
    candidate end tried in turn; nested process-group objects end earlier)."""
    m = _DIST.search(text)
    if not m:
        return {}
    start = m.end() - 1
    end = start
    for _ in range(10_000):
        end = text.find(b"}", end + 1, start + _DIST_MAX)
        if end < 0:
            break
        try:
            info = msgspec.json.decode(text[start:end + 1])
        except _chrome.DECODE_ERRORS:   # invalid UTF-8, nested too deep: the latter two
            continue
        return {"distributedInfo": info} if isinstance(info, dict) else {}
    return {}


def parse(source: Source) -> ParseResult:
    """Parse one profiler trace into ``torch_events`` and ``torch_traces``; a trace cut by
    the decompression limit (or a damaged .gz) says so instead of guessing a killed job."""
    result = _parse(source)
    result.problems = explain_cut(source.cut_short(), result.problems)
    return result


def _parse(source: Source) -> ParseResult:
    """Parse one PyTorch profiler trace into ``torch_events`` and ``torch_traces``."""
    name = source.name
    problems: list[Problem] = []
    out = _Out()
    trailer = b""
    with source.open() as fh:
        prefix, start = _read_prefix(fh)
        if start is None:
            msg = ("no traceEvents array in the first "
                   f"{len(prefix):,} bytes: not a PyTorch profiler trace, or cut before "
                   "its events" if prefix.strip() else "empty file")
            return ParseResult(problems=[Problem(name, msg, severity="error")],
                               variant="failed")
        meta, bad_meta = _meta_before(prefix[:start.start()])
        if bad_meta is not None:
            problems.append(Problem(
                name, f"the metadata before traceEvents does not decode ({bad_meta}): "
                "rank and world size only where distributedInfo itself is readable, no "
                "device properties", 1, "warning"))
        offset = start.end() - 1               # the array's '[': byte and line numbers
        out.newlines = prefix.count(b"\n", 0, offset)   # in problems count from the file's start
        stream = _EventsStream(fh, prefix[offset:])
        with _chrome.paused_gc():
            _Scanner(stream, name, out, offset).run()   # type: ignore[arg-type]
        trailer = stream.trailer
        trailer_line = prefix.count(b"\n", 0, offset) + stream.newlines + 1
    meta.update({k: v for k, v in _meta_after(trailer).items() if k not in meta})
    problems.extend(out.problems)
    if out.bad_records > MAX_PROBLEMS:
        problems.append(Problem(name, f"{out.bad_records - MAX_PROBLEMS:,} more malformed "
                                "record(s) skipped", severity="error"))
    if out.bad_values > MAX_PROBLEMS:
        lo, hi = out.more_lines or (None, None)
        problems.append(Problem(name, f"{out.bad_values - MAX_PROBLEMS:,} more values that "
                                "are not numbers of their column" + (
                                    f" (lines {lo}-{hi})" if lo is not None else "")
                                + ": each made missing or its record skipped", lo, "error"))
    stated = _meta_numbers(meta, name, _dist_line(prefix[:start.start()], trailer,
                                                  trailer_line), problems)
    cut = not out.closed
    if cut and not out.torn:
        problems.append(Problem(name, "the trace ends inside traceEvents (the job was "
                                "probably killed while the profiler wrote it): the events "
                                "before the cut were read", None, "error"))
    if not out.kept and not cut:
        problems.append(Problem(name, "the trace holds no events (the profiler recorded "
                                "nothing: a schedule that never reached an active step?)",
                                None, "warning"))
    events, traces = _tables(out, meta, stated, name, cut)
    return ParseResult({"torch_events": events, "torch_traces": traces}, problems,
                       "kineto (cut)" if cut else "kineto")


def _dist_line(before: bytes, trailer: bytes, trailer_line: int) -> int | None:
    """The line where distributedInfo starts: in the metadata before the events, else in
    the trailer (whose first byte is on ``trailer_line``)."""
    m = _DIST.search(before)
    if m is not None:
        return before.count(b"\n", 0, m.start()) + 1
    m = _DIST.search(trailer)
    return None if m is None else trailer_line + trailer.count(b"\n", 0, m.start())


def _read_prefix(fh: IO[bytes]) -> tuple[bytes, re.Match[bytes] | None]:
    """The bytes read until the events array starts, and where it starts."""
    buf = b""
    while len(buf) < MAX_PREFIX:
        chunk = fh.read(1 << 16)
        if not chunk:
            break
        buf += chunk
        m = _EVENTS_KEY.search(buf)
        if m:
            return buf, m
    return buf, None


_INTISH = re.compile(INT_PATTERN)


def _int_field(v: Any) -> int | NumberError | None:
    """An integer field of an event (pid, tid, args stream): its value when it is an int64
    (a JSON integer, or a string of one: ``"12"``), a :class:`NumberError` when it is a
    number that is not one (2^63, 30 digits, ``"1²"``), None when absent or not a number at
    all (Kineto's ``"pid": "Spans"`` labels its own spans)."""
    if type(v) is int:
        return v if INT64_MIN <= v <= INT64_MAX else _error(check_int, v)
    if isinstance(v, str) and _INTISH.fullmatch(v.strip()):
        try:
            return parse_int(v)
        except NumberError as exc:
            return exc
    return None


def _count_field(v: Any) -> int | NumberError | None:
    """A count of args (``In msg nelems``): 0..int64, as :func:`_int_field`; text that is
    not shaped like a number is no count (None)."""
    n = _int_field(v)
    if isinstance(n, int) and n < 0:
        return NumberError(str(n), "is negative")
    return n


def _error(check: Any, v: Any) -> NumberError:
    try:
        check(v)
    except NumberError as exc:
        return exc
    return NumberError(str(v)[:48], "is not a number")


def _time_field(v: Any, lo: float) -> float | NumberError | None:
    """A time of an event (``ts``, ``dur``; microseconds): a finite number (a string of one
    too: ``"12.5"``) in ``lo`` .. :data:`TIME_LIMIT_US`; None when absent; else a
    :class:`NumberError` (``"inf"``, ``1e300``, ``-5`` for a duration)."""
    if v is None:
        return None
    try:
        if isinstance(v, str):
            f = parse_float(v)
        elif type(v) is int or type(v) is float:
            f = check_float(v)
        else:
            return NumberError(str(v)[:48], "is not a number")
    except NumberError as exc:
        return exc
    if lo <= f < TIME_LIMIT_US:
        return f
    text = repr(v) if isinstance(v, float) else str(v)
    if f < 0 and lo == 0:
        return NumberError(text, "is negative")
    return NumberError(text, "is out of range (a time of the profiler's 64-bit nanosecond "
                             f"clock is within +-{TIME_LIMIT_US:.4g} us)")


def _step_number(name: str) -> int | NumberError | None:
    """N of a ``ProfilerStep#N`` name (a count); a NumberError when N is shaped like a
    number but is not a count (30 digits, ``'٣'``); None for other names."""
    m = _STEP.match(name)
    if m is None:
        return None
    try:
        return parse_count(m.group(1))
    except NumberError as exc:
        return exc


def collective_of(name: str, args: _Args | None = None) -> str | None:
    """The collective an event's name (or its args' 'Collective name') says, normalised:
    ``ncclKernel_AllReduce_RING_LL_Sum_float`` -> all_reduce, ``c10d::_allgather_base_``
    -> all_gather, ``nccl:all_to_all`` -> all_to_all."""
    m = _NCCL_KERNEL.search(name) or _BACKEND.match(name) or _C10D.match(name)
    word = m.group(1) if m else None
    if word is None and args is not None and isinstance(args.collective, str):
        word = args.collective
    if word is None:
        return None
    flat = re.sub(r"[^a-z]", "", word.lower().replace("_base", ""))
    return next((canon for key, canon in _COLLECTIVES if flat.startswith(key)), flat or None)


def _elements(args: _Args | None) -> int | None:
    if args is None:
        return None
    n = _count_field(args.nelems)
    if isinstance(n, int):
        return n
    dims = args.input_dims
    if not isinstance(dims, list) or not dims:
        return None
    first = dims[0]
    if isinstance(first, list) and first and isinstance(first[0], list):
        first = first[0]                      # c10d ops: a list of tensors first
    if not isinstance(first, list) or not first or \
            not all(isinstance(d, int) and not isinstance(d, bool) for d in first):
        return None
    return math.prod(first)


def _dtype(args: _Args | None) -> str | None:
    if args is None:
        return None
    if isinstance(args.dtype, str) and args.dtype:
        return args.dtype
    t = args.input_type
    if isinstance(t, list) and t and isinstance(t[0], str) and t[0]:
        return t[0]
    return None


_NULL = np.iinfo("int64").min
_BIG = 1 << 63


def _int64s(values: list[Any]) -> tuple[np.ndarray, bool]:
    """Integers as int64, :data:`_NULL` where a value is not one (:func:`_int_field`), and
    whether one was a number that does not fit."""
    if set(map(type, values)) <= {int}:
        try:
            return np.array(values, dtype="int64"), False
        except OverflowError:
            pass
    out = [_int_field(v) for v in values]
    bad = any(isinstance(v, NumberError) for v in out)
    return np.array([v if isinstance(v, int) else _NULL for v in out], dtype="int64"), bad


def _float64s(values: list[Any], lo: float) -> tuple[np.ndarray, bool]:
    """Times as float64, NaN where a value is absent or not one (:func:`_time_field`), and
    whether one was present and not a time."""
    if set(map(type, values)) <= {int, float}:
        try:
            arr = np.array(values, dtype="float64")
        except OverflowError:
            pass
        else:
            if bool(((arr >= lo) & (arr < TIME_LIMIT_US)).all()):   # NaN: not
                return arr, False
    out = [_time_field(v, lo) for v in values]
    bad = any(isinstance(v, NumberError) for v in out)
    return np.array([v if isinstance(v, float) else math.nan for v in out],
                    dtype="float64"), bad


def _maybe_comm(cat: str, name: str) -> bool:
    """True when an event of this category and name can be communication or a comm_op
    (:func:`_role` decides which, once the whole trace is read)."""
    if cat in _DEVICE_CATS:
        return cat == "kernel" and "nccl" in name.lower()
    return bool(_BACKEND.match(name) or _C10D.match(name) or name == "record_param_comms")


def _nullable(values: np.ndarray) -> pd.arrays.IntegerArray:
    null = values == _NULL
    return pd.arrays.IntegerArray(np.where(null, 0, values), null)


def _categorical(codes: np.ndarray, interned: dict[str, int]) -> pd.Categorical:
    """Interned codes as a categorical with sorted categories (as pandas makes them)."""
    values = list(interned)
    order = sorted(range(len(values)), key=values.__getitem__)
    recode = np.empty(len(values), dtype="int32")
    recode[order] = np.arange(len(values), dtype="int32")
    return pd.Categorical.from_codes(recode[codes] if len(values) else codes,
                                     categories=pd.Index([values[i] for i in order],
                                                         dtype=object))


def _role(cat: str, name: str, gpu_trace: bool) -> str:
    device = _DEVICE_CATS.get(cat)
    if device is not None:
        if cat == "kernel" and "nccl" in name.lower():
            return "communication"
        return device
    if cat in ("cuda_runtime", "cuda_driver", "runtime"):
        return "runtime"
    if isinstance(_step_number(name), int):
        return "step"
    if _BACKEND.match(name):
        return "comm_op" if gpu_trace else "communication"
    if _C10D.match(name) or name == "record_param_comms":
        return "comm_op"
    if cat == "cpu_op":
        return "cpu_op"
    return "annotation"


def _meta_numbers(meta: dict[str, Any], source: str, line: int | None,
                  problems: list[Problem]) -> dict[str, int | None]:
    """``rank``, ``world_size`` (distributedInfo) and ``schema_version`` as the trace states
    them; a value that is not one (c10d holds rank and world size as a C int: a world of
    1..2^31-1, a rank of 0..world_size-1; 10^30, -3, ``"0²"``) is None, with an error
    naming the file and ``line`` (where distributedInfo starts)."""
    dist = meta.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    out: dict[str, int | None] = {}

    def read(key: str, v: Any, lo: int, hi: int, what: str, suffix: str = "") -> int | None:
        if v is None:
            return None
        try:
            if isinstance(v, str):
                return parse_int(v, lo=lo, hi=hi)
            return check_int(v, lo=lo, hi=hi)
        except NumberError as exc:
            suffix = suffix if exc.reason.startswith("is out of range") else ""
            problems.append(Problem(source, f"{what} {exc}{suffix}: the trace's {key} is "
                                    "missing", line, "error"))
            return None

    world = read("world_size", dist.get("world_size"), 1, MAX_WORLD,
                 "distributedInfo world_size")
    out["world_size"] = world
    out["rank"] = read("rank", dist.get("rank"), 0, MAX_WORLD if world is None else world - 1,
                       "distributedInfo rank",
                       "" if world is None else f": not a rank of world_size {world}")
    out["schema_version"] = read("schema_version", meta.get("schemaVersion"), INT64_MIN,
                                 INT64_MAX, "schemaVersion")
    return out


def _tables(out: _Out, meta: dict[str, Any], stated: dict[str, int | None], source: str,
            cut: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    dist = meta.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    rank = stated["rank"]
    parts = out.parts
    col = {k: (np.concatenate(v) if v else np.empty(0, dtype="int32" if k in ("cat", "name")
                                                   else "float64" if k in ("ts", "dur")
                                                   else "int64"))
           for k, v in parts.items()}
    n = out.kept
    cat_names = list(out.cats)
    name_names = list(out.names)
    gpu_trace = "kernel" in out.cats
    # the role of each distinct (category, name)
    width = max(len(name_names), 1)
    pair = col["cat"].astype("int64") * width + col["name"]
    uniq, inverse = np.unique(pair, return_inverse=True)
    roles = [_role(cat_names[p // width], name_names[p % width], gpu_trace)
             for p in uniq.tolist()]
    present = {r: k for k, r in enumerate(dict.fromkeys(roles))}
    role_codes = np.array([present[r] for r in roles], dtype="int32")[inverse]
    role = _categorical(role_codes, present)
    is_comm = np.array([r in ("communication", "comm_op") for r in roles], dtype=bool)[inverse]
    collective: list[Any] = [None] * n
    elements = np.full(n, _NULL, dtype="int64")
    dtypes: list[Any] = [None] * n
    size = np.full(n, _NULL, dtype="int64")
    for i, args in out.comm_args:
        if not is_comm[i]:
            continue
        coll = collective_of(name_names[col["name"][i]], args)
        if coll is None:
            continue
        collective[i] = coll
        k = _elements(args)
        dtype = _dtype(args)
        width_b = _DTYPE_BYTES.get(dtype.lower()) if dtype else None
        dtypes[i] = dtype
        if k is not None and -_BIG < k < _BIG:
            elements[i] = k
            if width_b and -_BIG < k * width_b < _BIG:
                size[i] = k * width_b
    frame = pd.DataFrame({
        "source": pd.Categorical.from_codes(np.zeros(n, dtype="int8"), categories=[source]),
        "rank": pd.arrays.IntegerArray(np.full(n, rank if rank is not None else 0,
                                                dtype="int64"),
                                        np.full(n, rank is None)),
        "cat": _categorical(col["cat"], out.cats),
        "name": _categorical(col["name"], out.names),
        "role": role,
        "device": _nullable(col["pid"]),
        "stream": _nullable(col["stream"]),
        "tid": _nullable(col["tid"]),
        "ts_us": col["ts"],
        "dur_us": col["dur"],
        "collective": pd.Categorical(collective),
        "elements": _nullable(elements),
        "dtype": pd.array(dtypes, dtype="string"),
        "size_bytes": _nullable(size),
    })
    frame["step"] = _steps(frame)
    events = schema.conform(frame, TORCH_EVENTS)
    ts, end = events["ts_us"], events["ts_us"] + events["dur_us"].fillna(0)
    gpus = meta.get("deviceProperties")
    gpu = gpus[0].get("name") if isinstance(gpus, list) and gpus and \
        isinstance(gpus[0], dict) else None
    traces = schema.conform(pd.DataFrame({
        "source": [source], "rank": [rank], "world_size": [stated["world_size"]],
        "backend": [dist.get("backend") if isinstance(dist.get("backend"), str) else None],
        "gpu": [gpu if isinstance(gpu, str) else None],
        "schema_version": [stated["schema_version"]],
        "events": [len(events)], "kernels": [int((events["cat"] == "kernel").sum())],
        "first_us": [ts.min() if len(ts) else math.nan],
        "last_us": [end.max() if len(end) else math.nan], "cut": [cut]}), TORCH_TRACES)
    return events, traces


def _steps(frame: pd.DataFrame) -> pd.Series:
    """N of the ProfilerStep#N each event starts in (null outside every step)."""
    out = pd.Series(pd.array([None] * len(frame), dtype="Int64"))
    steps = frame[frame["role"] == "step"]
    if steps.empty:
        return out
    numbers = np.array([_step_number(n) for n in steps["name"].astype(str)], dtype="int64")
    starts = steps["ts_us"].to_numpy(dtype="float64")
    ends = starts + steps["dur_us"].to_numpy(dtype="float64")
    order = np.argsort(starts, kind="stable")
    starts, ends, numbers = starts[order], ends[order], numbers[order]
    ts = frame["ts_us"].to_numpy(dtype="float64")
    k = np.searchsorted(starts, ts, side="right") - 1
    ok = (k >= 0) & (ts < ends[np.clip(k, 0, None)])
    vals = np.where(ok, numbers[np.clip(k, 0, None)], 0)
    return pd.Series(pd.arrays.IntegerArray(vals.astype("int64"), ~ok))


# -- several traces ------------------------------------------------------------------------------

#: what :func:`parse_many` tells about each source
Parsed = SourceReport


#: an input that takes this long to read and parse gets an info row with its time (as the
#: loader notes inputs read alone)
SLOW_S = 30.0


def parse_many(sources: Sequence[Source], problems: list[Problem],
               progress: Callable[[Source, int, int], None] | None = None
               ) -> tuple[dict[str, pd.DataFrame], list[Parsed]]:
    """Parse several traces, each as :func:`parse` (a crash costs that trace only), then
    name the traces that claim one rank of one job (:func:`same_rank`): a warning on the
    later one. Returns the tables and one report per source, in order."""
    parts: dict[str, list[pd.DataFrame]] = {}
    out: list[Parsed] = []
    for i, src in enumerate(sources):
        if progress is not None:
            progress(src, i, len(sources))
        started = time.perf_counter()
        try:
            result = parse(src)
        except Exception as exc:   # a reader's bug must not cost the other traces
            where = traceback.extract_tb(exc.__traceback__)[-1]
            result = ParseResult(problems=[Problem(
                src.name, f"torchtrace {CRASH}{type(exc).__name__}: {exc} (at "
                f"{os.path.basename(where.filename)}:{where.lineno}; please report)",
                severity="error")], variant="failed")
        seconds = time.perf_counter() - started
        mine = list(result.problems)
        if seconds >= SLOW_S:
            mine.append(Problem(src.name, f"took {seconds:,.0f} s to read and parse",
                                severity="info"))
        for name, df in result.tables.items():
            parts.setdefault(name, []).append(df)
        out.append(Parsed(src, result.variant, result.rows, mine))
    traces = parts.get("torch_traces", [])
    if traces:
        index = {p.source.name: p for p in out}
        for p in same_rank(schema.concat(traces)):
            index[p.source].problems.append(p)
    for parsed in out:
        problems.extend(parsed.problems)
    tables = {k: v[0] if len(v) == 1 else schema.concat(v) for k, v in parts.items()}
    return tables, out


def same_rank(traces: pd.DataFrame) -> list[Problem]:
    """A warning for each trace that claims the rank of an earlier one of the same job:
    the same distributedInfo world size and backend, profiled at overlapping times. Two
    processes of one job cannot both be rank 0: one trace's rank is wrong (a copy, a
    rank read from the wrong variable), or they are two jobs' run side by side. The
    collective comparison does not pair them (``analysis.torchtrace.rank_comm``)."""
    found: list[Problem] = []
    rows = traces.dropna(subset=["rank", "world_size"])
    for _, g in rows.groupby(["world_size", "rank"], sort=False, dropna=False):
        if len(g) < 2:
            continue
        seen: list[tuple[str, Any, float, float]] = []
        for r in g.itertuples(index=False):
            lo, hi = float(r.first_us), float(r.last_us)
            backend = r.backend if isinstance(r.backend, str) else None
            for other, b, olo, ohi in seen:
                if b == backend and lo < ohi and olo < hi:
                    found.append(Problem(
                        str(r.source), f"this trace and {other} both claim rank {r.rank} of "
                        f"a world of {r.world_size} (distributedInfo), profiled at "
                        "overlapping times: one of them states a wrong rank, or they are "
                        "two jobs' traces; their collectives are not compared with each "
                        "other", None, "warning"))
                    break
            seen.append((str(r.source), backend, lo, hi))
    return found
