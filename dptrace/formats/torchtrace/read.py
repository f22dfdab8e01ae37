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

import math
import re
from typing import IO, Any

import msgspec
import numpy as np
import pandas as pd

from ... import schema
from ...errors import Problem
from ...registry import ParseResult
from ...sources import Source
from .. import _chrome
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
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
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

    def problem(self, source: str, message: str, line: int | None,
                severity: str = "error") -> None:
        message = message.replace("writing the timeline", "writing the trace")
        self.problems.append(Problem(source, message, line, severity))

    def _cat_ok(self, cat: str) -> bool:
        ok = self.cat_ok.get(cat)
        if ok is None:
            ok = self.cat_ok[cat] = cat.lower() not in _SKIP_CATS
        return ok

    def add(self, evs: list[_Event]) -> None:
        ok = self._cat_ok
        keep = [e for e in evs if e.ph == "X" and type(e.cat) is str and type(e.name) is str
                and ok(e.cat) and (type(e.pid) is int or _int(e.pid) is not None)]
        if not keep:
            return
        cats, names = self.cats, self.names
        cat_text = [e.cat for e in keep]
        cat = [cats[c] if c in cats else cats.setdefault(c, len(cats)) for c in cat_text]
        name = [names[n] if n in names else names.setdefault(n, len(names))
                for n in [e.name for e in keep]]
        pid = _int64s([e.pid for e in keep])
        device = np.array([c in _DEVICE_CATS for c in cat_text], dtype=bool)
        tid = _int64s([e.tid for e in keep])
        stream = np.full(len(keep), _NULL, dtype="int64")
        for i in np.flatnonzero(device).tolist():
            args = keep[i].args
            s = _int(args.stream) if args is not None else None
            stream[i] = s if s is not None and -_BIG < s < _BIG else tid[i]
        tid[device] = _NULL
        pid[~device] = _NULL
        parts = self.parts
        parts["cat"].append(np.array(cat, dtype="int32"))
        parts["name"].append(np.array(name, dtype="int32"))
        parts["pid"].append(pid)
        parts["tid"].append(tid)
        parts["stream"].append(stream)
        parts["ts"].append(_float64s([e.ts for e in keep]))
        parts["dur"].append(_float64s([e.dur for e in keep]))
        seen, base = self.maybe_comm, self.kept
        for i, key in enumerate(zip(cat, name, strict=True)):
            m = seen.get(key)
            if m is None:
                e = keep[i]
                m = seen[key] = _maybe_comm(e.cat, e.name)
            if m:
                self.comm_args.append((base + i, keep[i].args))
        self.kept += len(keep)


class _Scanner(_chrome.BlockScanner):
    """The container's blocks decoded as Kineto events."""

    def __init__(self, fh: IO[bytes], source: str, out: _Out, offset: int) -> None:
        super().__init__(fh, source, _chrome.Range(offset, None, True, True), out)
        self.kept = out

    def decode_block(self, data: Any) -> None:
        self.kept.add(_DECODE_MANY(data))

    def validated(self, piece: bytes, start: int, record: bytes) -> Any:
        return _DECODE_ONE(record)

    def add_records(self, events: list[Any]) -> None:
        self.kept.add(events)


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
            return out
        give = min(want, len(self.pending) if self.eof else max(len(self.pending) - _KEEP, 0))
        out = bytes(self.pending[:give])
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
    except (msgspec.DecodeError, UnicodeDecodeError):   # invalid UTF-8 raises the latter
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
        except (msgspec.DecodeError, UnicodeDecodeError):   # invalid UTF-8: the latter
            continue
        return {"distributedInfo": info} if isinstance(info, dict) else {}
    return {}


def parse(source: Source) -> ParseResult:
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
    meta.update({k: v for k, v in _meta_after(trailer).items() if k not in meta})
    problems.extend(out.problems)
    if out.bad_records > MAX_PROBLEMS:
        problems.append(Problem(name, f"{out.bad_records - MAX_PROBLEMS:,} more malformed "
                                "record(s) skipped", severity="error"))
    cut = not out.closed
    if cut and not out.torn:
        problems.append(Problem(name, "the trace ends inside traceEvents (the job was "
                                "probably killed while the profiler wrote it): the events "
                                "before the cut were read", None, "error"))
    if not out.kept and not cut:
        problems.append(Problem(name, "the trace holds no events (the profiler recorded "
                                "nothing: a schedule that never reached an active step?)",
                                None, "warning"))
    events, traces = _tables(out, meta, name, cut)
    return ParseResult({"torch_events": events, "torch_traces": traces}, problems,
                       "kineto (cut)" if cut else "kineto")


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


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


def _float(v: Any) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return math.nan
    return math.nan


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
    n = _int(args.nelems)
    if n is not None:
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


def _int64s(values: list[Any]) -> np.ndarray:
    """Integers as int64, :data:`_NULL` where a value is not one (as :func:`_int`)."""
    if set(map(type, values)) <= {int}:
        try:
            return np.array(values, dtype="int64")
        except OverflowError:
            pass
    out = [_int(v) for v in values]
    return np.array([v if v is not None and -_BIG < v < _BIG else _NULL for v in out],
                    dtype="int64")


def _float64s(values: list[Any]) -> np.ndarray:
    """Numbers as float64, NaN where a value is not one (as :func:`_float`)."""
    if set(map(type, values)) <= {int, float}:
        try:
            return np.array(values, dtype="float64")
        except OverflowError:
            pass
    return np.array([_float(v) for v in values], dtype="float64")


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
    if _STEP.match(name):
        return "step"
    if _BACKEND.match(name):
        return "comm_op" if gpu_trace else "communication"
    if _C10D.match(name) or name == "record_param_comms":
        return "comm_op"
    if cat == "cpu_op":
        return "cpu_op"
    return "annotation"


def _tables(out: _Out, meta: dict[str, Any], source: str, cut: bool
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    dist = meta.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    rank = _int(dist.get("rank"))
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
        "source": [source], "rank": [rank], "world_size": [_int(dist.get("world_size"))],
        "backend": [dist.get("backend") if isinstance(dist.get("backend"), str) else None],
        "gpu": [gpu if isinstance(gpu, str) else None],
        "schema_version": [_int(meta.get("schemaVersion"))],
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
    numbers = steps["name"].str.extract(_STEP.pattern)[0].astype("int64").to_numpy()
    starts = steps["ts_us"].to_numpy(dtype="float64")
    ends = starts + steps["dur_us"].to_numpy(dtype="float64")
    order = np.argsort(starts, kind="stable")
    starts, ends, numbers = starts[order], ends[order], numbers[order]
    ts = frame["ts_us"].to_numpy(dtype="float64")
    k = np.searchsorted(starts, ts, side="right") - 1
    ok = (k >= 0) & (ts < ends[np.clip(k, 0, None)])
    vals = np.where(ok, numbers[np.clip(k, 0, None)], 0)
    return pd.Series(pd.arrays.IntegerArray(vals.astype("int64"), ~ok))
