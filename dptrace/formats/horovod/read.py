"""Horovod timelines (``HOROVOD_TIMELINE=timeline.json``): Chrome trace events, one pid per tensor.

Rank 0 writes the file but it covers every rank. Real records (``shared/realdata/
horovod_timeline``)::

    [
    {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros":
    1633399518104473}},                                                  # (one line in the file)
    {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "broadcast.bn1.bias"}},
    {"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 1410499527951, "pid": 14},
    {"ph": "X", "name": "2", "ts": 1410499527953, "pid": 14, "dur": 0},
    {"ph": "E", "ts": 1410499936035, "pid": 14},
    {"ph": "B", "name": "MEMCPY_IN_FUSION_BUFFER", "ts": 1410500008116, "pid": 15},
    {"ph": "E", "ts": 1410500014297, "pid": 15, "args": {"dtype": "float32", "shape":
    "[172, 4096]"}},                                                     # (one line in the file)
    {"ph": "i", "name": "CYCLE_START", "ts": 1410488741507, "s": "g"},
    {"name": "NEGOTIATE_ALLREDUCE", "pid": 1, "ph": "B", "ts": 8440608},   # sagemaker-debugger

``B NEGOTIATE_<OP>`` ... ``E`` is the negotiation, and the ``X`` ticks named ``"0"``,
``"1"``, ... inside it are the moments each rank reported the tensor ready. ``B <OP>``
(ALLREDUCE, BROADCAST, ...) holds nested activities (QUEUE, MEMCPY_IN_FUSION_BUFFER,
NCCL_ALLREDUCE, ...); the ``E`` closing the op carries dtype and shape. ``E`` records are
matched to their ``B`` with a stack per pid. Timestamps are microseconds; they are made
relative to the first event (0.16-0.18 builds wrote huge absolute values) and the offset
is kept in ``hvd_runs.ts_offset_us``.

Framing: up to Horovod 0.20.0 one event per line and the array is never closed (the file
ends ``},``); from 0.20.1 the events are appended to a few enormous lines and each write
ends ``}]``; a killed job leaves a record cut in the middle; sagemaker-debugger rewrites
the keys in another order. Reading is streamed in blocks (the Chrome trace container:
:mod:`dptrace.formats._chrome`; Horovod's events: :mod:`.decode`) and the tables are built
from whole columns (:mod:`.build`, :mod:`.frames`).
See docs/horovod.md.

Bad numbers (issue 12): a pid beyond int64 costs its record; a ts outside 0..2^63 us is
dropped from its record (kept without a time); both name byte and line
(:mod:`.decode`). A duration is never negative: an interval whose E comes before its B
has none, and timestamps going backwards are counted once per file
(``Built.time_problems``). Duplicate keys give one warning per file.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ... import memory, schema
from ...errors import Problem
from ...executor import Executor
from ...registry import ParseResult
from ...sources import Source
from .._problems import explain_cut
from . import OBJECT_TRACE as _OBJECT_TRACE
from . import STARTS_LIKE_EVENTS as _STARTS_LIKE_EVENTS
from .build import Events, Stack, X
from .decode import MAX_PROBLEMS, Columns, decode_file, merge
from .frames import (
    Built,
    Intervals,
    Meta,
    Names,
    Ticks,
    activities_frame,
    cycle_times,
    cycles_frame,
    int_na,
    ready_frame,
    source_cat,
    tensors_frame,
)
from .tables import HVD_RUNS

#: inputs with this many events (a ~250 MB file) build their frames in threads (faster, more
#: memory at once); below, the gain is a few % and the peak 0.7x the file higher (100 MB:
#: 4.4x -> 3.8x the file); above MEMORY_EVENTS (a ~2 GB file) serially, so that 10 GB fit
#: in 24 GB
THREADED_EVENTS = 4_000_000
MEMORY_EVENTS = 30_000_000
_SMDEBUG_KEYS = re.compile(rb'\{"name": "[^"]*", "pid": -?\d+, "ph": "[BEXi]"')
HOROVOD_NAMES = re.compile(r"NEGOTIATE_|CYCLE_START$|(ALLREDUCE|ALLGATHER|BROADCAST|"
                           r"REDUCESCATTER|ALLTOALL|ADASUM|BARRIER|JOIN)$|_FUSION_BUFFER$")


def parse(source: Source, *, executor: Executor | None = None) -> ParseResult:
    """Parse one timeline (see the module text); a timeline cut by the decompression limit
    (or a damaged .gz) says so instead of guessing a killed job."""
    result = _parse(source, executor=executor)
    result.problems = explain_cut(source.cut_short(), result.problems)
    return result


def _parse(source: Source, *, executor: Executor | None = None) -> ParseResult:
    """Parse one Horovod timeline into the hvd_* tables (a large plain file in byte ranges
    on ``executor``'s workers, :func:`.decode.decode_file`)."""
    head = source.head(1 << 16)
    refusal = _refusal(head)
    if refusal:
        return ParseResult(problems=[Problem(source.name, refusal, severity="error")],
                           variant="failed")
    opener = source.open if source.compression else None
    cols = merge(decode_file(str(source.path), source.name, _size(source), opener,
                             executor))
    memory.release(cols.events)              # the blocks' buffers and structs
    problems = list(cols.problems)
    if cols.bad_records > MAX_PROBLEMS:
        problems.append(Problem(source.name, f"{cols.bad_records - MAX_PROBLEMS:,} more "
                                "malformed record(s) skipped", severity="error"))
    if cols.bad_times > MAX_PROBLEMS:
        problems.append(Problem(source.name, f"{cols.bad_times - MAX_PROBLEMS:,} more "
                                "record(s) kept without their out-of-range timestamp",
                                severity="error"))
    if not cols.events:
        problems.append(Problem(source.name, "the timeline holds no events (Horovod writes "
                                "them from the first collective on)", severity="warning"))
        return ParseResult({}, problems, _layout(head, cols))
    ev = Events.from_columns(cols)
    names = Names.of(ev)
    if _foreign_trace(ev, cols):
        problems.append(Problem(source.name, _foreign(ev), severity="error"))
        return ParseResult({}, problems, "failed")
    if cols.dup_keys:
        problems.append(Problem(source.name, f"{cols.dup_keys:,} duplicate key(s) in records "
                                "(e.g. two \"ts\" in one record): the last value of each was "
                                "used. Only the first MB and records read one by one are "
                                "checked, so there may be more", severity="warning"))
    odd = _not_rank_ticks(ev, names)
    if odd:
        problems.append(Problem(source.name, f"{odd[0]:,} X event(s) named like a rank that "
                                f"is none (e.g. {odd[1]!r}: a rank is ASCII digits): not read "
                                "as rank-ready ticks", _line_of_name(source, odd[1]),
                                severity="warning"))
    built = _build(ev, names, cols, source.name)
    del ev                                   # the frames need only what Built kept
    memory.release(built.n_events)
    tables = _tables(built, head)
    problems.extend(_checks(built, tables))
    return ParseResult(tables, problems, _layout(head, cols))


def _not_rank_ticks(ev: Events, names: Names) -> tuple[int, str] | None:
    """(how many, the first name) of X events whose name reads as digits but names no
    rank ('²', '٣', ten digits or more): ticks dropped, said."""
    labels = [str(x) for x in ev.labels]
    bad = np.array([names.rank[i] < 0 and s.isdigit() for i, s in enumerate(labels)], bool)
    if not bad.any():
        return None
    hit = (ev.ph == X) & bad[ev.name]
    n = int(hit.sum())
    return (n, labels[int(ev.name[np.flatnonzero(hit)[0]])]) if n else None


def _line_of_name(source: Source, name: str) -> int | None:
    """The line of the first record named ``name`` (as written, or \\u-escaped), for a
    rare problem's place: one search of the file."""
    import json

    try:
        with source.buffer() as buf:
            for text in (json.dumps(name, ensure_ascii=False), json.dumps(name)):
                at = buf.find(b'"name": ' + text.encode("utf-8"))
                if at < 0:
                    at = buf.find(b'"name":' + text.encode("utf-8"))
                if at >= 0:
                    return bytes(buf[:at]).count(b"\n") + 1
    except (OSError, ValueError):
        pass
    return None


def _build(ev: Events, names: Names, cols: Columns, source: str) -> Built:
    """Match B/E records and collect what the frames need; the pid-sorted stack (about
    19 bytes per event) is dropped before the frames are built."""
    n = len(ev.ph)
    meta = Meta.of(ev, cols)
    st = Stack.build(ev, names.rank >= 0)
    ev.pid = ev.pid[:0]                      # only the metadata and the stack needed it
    memory.release(n)                        # (each step's temporaries, see dptrace.memory)
    iv = Intervals.of(ev, st, names)
    memory.release(n)
    ticks = Ticks.of(ev, st, iv, names)
    pids, orphans = st.pids, int(st.orphan.sum())
    del st
    memory.release(n)
    span = float(np.fmax.reduce(ev.ts)) if n else np.nan    # NaN: no time (no copy)
    return Built(n, ev.labels, ev.ts0, span, cycle_times(ev, cols), iv, ticks, names, meta,
                 cols, source, pids, orphans, ev.backwards, ev.max_back_us)


def _size(source: Source) -> int:
    try:
        return source.size()
    except OSError:
        return 0


def _refusal(head: bytes) -> str | None:
    """Why this is surely not a Horovod timeline, judged from its first bytes."""
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body:
        return None
    if _OBJECT_TRACE.match(body) or (body[:1] == b"{" and not _STARTS_LIKE_EVENTS.match(body)):
        kind = ("a Chrome trace object with traceEvents (torch.profiler / Kineto?)"
                if b'"traceEvents"' in head else "a JSON object")
        return (f"not a Horovod timeline: {kind}. Horovod writes a JSON array of trace events "
                "([{\"name\": \"process_name\", \"ph\": \"M\", ...}, ...]).")
    if body[:1] not in (b"[", b"{"):
        return ("not a Horovod timeline: not JSON (a timeline starts with '[' and holds "
                "Chrome trace events)")
    return None


def _foreign_trace(ev: Events, cols: Columns) -> bool:
    """Timed events, none of them Horovod's, and no Horovod start-time record."""
    if any(HOROVOD_NAMES.match(str(s)) for s in ev.labels):
        return False
    if any(start is not None for _, _, start in cols.meta):
        return False
    return bool((ev.ph != ord("M")).any())


def _foreign(ev: Events) -> str:
    counts = pd.Series(ev.name).value_counts().head(5)
    top = ", ".join(repr(str(ev.labels[c])) for c in counts.index)
    return (f"not a Horovod timeline: a Chrome trace of {len(ev.ph):,} events without Horovod's "
            f"(NEGOTIATE_*, ALLREDUCE, ..., CYCLE_START); most common names: {top}")


def _tables(b: Built, head: bytes) -> dict[str, pd.DataFrame]:
    """The frames, built in threads: their numpy work releases the GIL (~1.6x on 2 cores).

    They are built with the schema's columns and dtypes, so they are not conformed here
    (``load`` does it once; a conform here would copy every table).
    """
    b.perm  # noqa: B018  (computed once, before the threads share it)
    jobs = {
        "hvd_tensors": lambda: tensors_frame(b),
        "hvd_ready": lambda: ready_frame(b),
        "hvd_cycles": lambda: cycles_frame(b),
        "hvd_activities": lambda: activities_frame(b),
    }
    if THREADED_EVENTS <= b.n_events < MEMORY_EVENTS:
        with ThreadPoolExecutor(3) as pool:
            futures = {name: pool.submit(job) for name, job in jobs.items()}
            frames = {name: f.result() for name, f in futures.items()}
    else:
        frames = {}
        for name, job in jobs.items():
            frames[name] = job()
            if name == "hvd_ready":
                b.ticks = None               # the ticks serve hvd_ready only
            memory.release(len(frames[name]))  # the frame's temporaries
    frames["hvd_runs"] = schema.conform(_runs_frame(b, frames, head), HVD_RUNS)
    return frames


def _runs_frame(b: Built, f: dict[str, pd.DataFrame], head: bytes) -> pd.DataFrame:
    acts, ready = f["hvd_activities"], f["hvd_ready"]
    nego = acts[acts["level"] == "negotiate"]
    start = b.meta.start_epoch_us
    row = {
        "layout": _layout(head, b.cols), "events": b.cols.events,
        "tensors": int((b.pids >= 0).sum()), "ranks": int(ready["rank"].nunique()),
        "negotiations": len(nego),
        "negotiations_with_ticks": int((ready["last_ready"] & ready["op_index"].notna()).sum()),
        "ops": len(f["hvd_tensors"]), "open_intervals": int((~acts["complete"]).sum()),
        "unmatched_ends": b.orphans, "cycles": len(f["hvd_cycles"]),
        "span_us": b.span_us, "ts_offset_us": b.ts0,
        "closed": b.cols.closed, "truncated": b.cols.torn,
    }
    df = pd.DataFrame({k: [v] for k, v in row.items()})
    df.insert(0, "source", source_cat(b.source, 1))
    df["start_epoch_us"] = int_na(np.array([start or 0]), np.array([start is None]))
    return df


def _layout(head: bytes, cols: Columns) -> str:
    if _SMDEBUG_KEYS.search(head):
        return "sagemaker-debugger"
    return "per-line" if cols.newlines * 2 >= cols.events else "packed"


def _checks(b: Built, tables: dict[str, pd.DataFrame]) -> list[Problem]:
    """Warnings about what was kept but is suspicious."""
    out: list[Problem] = []
    acts = tables["hvd_activities"]
    open_ = acts[~acts["complete"]]
    if len(open_):
        first = open_.iloc[0]
        out.append(Problem(b.source, f"{len(open_)} interval(s) still open at the end of the file "
                           "(a B record without its E): the job was probably killed; kept with "
                           f"complete=False (first: {first['activity']} of {first['tensor']} at "
                           f"{first['start_us'] / 1e6:.6f} s)"))
    if b.orphans:
        out.append(Problem(b.source, f"{b.orphans} E record(s) closed nothing in their pid "
                           "(a file cut or rewritten at its start?): ignored"))
    unnamed = sorted(set(b.pids.tolist()) - set(b.meta.tensor_of_pid) - {-1})
    if unnamed:
        shown = ", ".join(str(p) for p in unnamed[:8]) + (" ..." if len(unnamed) > 8 else "")
        out.append(Problem(b.source, f"{len(unnamed)} pid(s) have no process_name record "
                           f"(pids {shown}): their tensor is shown as '(pid N)'"))
    if b.meta.conflicts:
        out.append(Problem(b.source, f"{b.meta.conflicts} process_name record(s) rename a pid "
                           "already named: the first name is kept"))
    return out + b.time_problems(acts)
