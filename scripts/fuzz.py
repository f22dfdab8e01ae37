#!/usr/bin/env python3
"""Mutation fuzzer for dptrace's readers (issue 12, item 5; issue 30).

Takes the real fixtures of every format (``tests/fixtures/<format>``), damages them
(truncation at every 1% and at random byte offsets, byte flips, NUL/0xFF insertion, invalid
UTF-8, deleted/duplicated lines, a number replaced by ``1e999``/``-1``/``nan``/
``99999999999999999999``, stray brackets and quotes, torn .gz/.bz2/.xz copies) and checks
every damaged copy against these invariants:

1. ``dptrace.load`` never raises;
2. every input has exactly one ``sources`` row, and every problem names that input;
   problem lines are >= 1 and within the input; ``sources.rows`` is the number of the
   input's rows in the tables, and the status agrees with the rows and the error problems
   (:func:`invariants`);
3. the exit code (``dptrace report``'s, computed from the Dataset) is 0, 1 or 3, and the
   CLI (``dptrace.cli.main(["report", f, "--json", j, "--html", h])``) returns the same;
   the report, terminal, JSON and HTML render without an exception (``render`` cases);
4. no silent loss, no changed value: the *prefix oracle* (below).

The prefix oracle. Everything before the first damaged byte is untouched, so whatever the
clean file gives from there must come out of the damaged file unchanged:

* ``trainlog`` (throughput, train_metrics), ``sntilestat`` (tiles), ``nccltests``
  (nccl_tests), ``nccl`` (nccl_events, nccl_env; its per-process ``nccl_setup`` sums
  lines and is not compared), ``dscomms`` (ds_comms) and ``mllog`` (mllog) rows carry
  their line number. Let L be the line holding the first damaged byte. The rows with
  ``lineno < L`` must equal, as a multiset over every column, the clean file's rows with
  ``lineno < L``
  (the 3 lines just before L may lose rows, never change them: a copy may wrap a record
  onto the damaged line, as docs do with Megatron's long lines)
  (except ``tiles.command``, which a copy may wrap onto the following lines: the damaged
  value must be a prefix of the clean one, and a tile's ``user`` the same or missing).
  For a *truncation*, rows on line L itself (the cut line) must either equal a clean row of
  line L or be flagged by a problem on line L (a cut number is flagged or dropped, never
  kept as a different value), and there are no rows past L.
* ``mpitrace``, ``mpip`` and ``horovod`` rows are compared by key (mpiP's ``mpi_*`` rows
  are sums over lines, or carry a line number in ``mpi_callsites`` only). For a
  truncation, every row of the truncated file must match a clean row with the same key
  (the schema's key; for ``hvd_ready`` pid, rank and time) whose values agree wherever the
  truncated row has a value (a row assembled from several lines, such as an mpitrace rank
  summary or an open Horovod interval, may miss the values that were past the cut).
  Columns that depend on what follows by definition are not compared (fused_tensors,
  last_ready, ranks_ready, complete; op_index of negotiations; hvd_runs). A mismatch is
  allowed only when a problem flags the file's last line. For other mutations, the same
  comparison is made in the other direction: every row of the clean file cut just before
  the damage (at the start of the damaged line for mpitrace and mpiP; at the damaged
  byte for Horovod, whose torn last event is dropped) must be found in the damaged file's
  rows.
* Horovod times (``start_us``, ``ts_us``) are relative to the file's earliest ``ts``
  (``hvd_runs.ts_offset_us``), and a damaged record can hold that earliest ts: a digit
  flipped or cut in a later event's ``ts`` (``3585422`` -> ``358542``), or a first event
  torn away, moves the origin, and so every relative time of the damaged file differs from
  the clean file's by one constant. Decided (issue 30): that is right, not a loss. The
  reader keeps what the file states; a ``ts`` is one number, not checked against its
  neighbours (timestamps going backwards are only warned about), and durations, waits and
  lags, which are all the analyses use, do not move. So the oracle compares Horovod times
  on the file's own clock, ``ts_us + ts_offset_us`` (:func:`raw_clock`): every untouched
  record must keep the ts it states, whatever the origin became. docs/horovod.md, "Bad
  input", says so for users.
* ``torchtrace`` (PyTorch profiler traces) is checked for the invariants above only: its
  events carry no line numbers and which ProfilerStep#N an event falls in depends on
  annotations that may come later in the file, so there is no prefix oracle for it yet.
* A case whose damaged copy is detected as a different format than the clean file is
  not compared (the invariants 1-3 still hold).

Usage::

    python scripts/fuzz.py --cases 1000000 --format trainlog --workers 2 --out fuzz-out
    python scripts/fuzz.py --minutes 20 --format all

The coverage-guided fuzzer (atheris: libFuzzer's feedback, per-format dictionaries, issue
30's bad values) is scripts/fuzz_atheris.py; it checks :func:`invariants` (1-3 without the
rendering, plus rows and status consistent) on every input it makes. tests/test_fuzz.py runs
a bounded share of both, one test per format.

Each failing input is written to ``--out`` (default ``fuzz-failures/``) with a ``.txt``
describing it; a hang (a case over ``--timeout`` seconds) kills and replaces its worker.
Cases are numbered and seeded: ``--seed S --only N`` reruns case N alone.
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import gzip
import io
import lzma
import math
import os
import random
import re
import resource
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FORMATS = ("trainlog", "mpitrace", "horovod", "sntilestat", "nccltests", "nccl",
           "torchtrace", "mpip", "dscomms", "mllog")
#: seeds bigger than this are skipped (speed: the fuzzer wants many cases)
MAX_SEED_BYTES = 400_000

NUMBERS = (b"1e999", b"-1", b"nan", b"99999999999999999999", b"1e308", b"-0", b"inf",
           b"NaN", b"Infinity", b"0x1F", b"1_000")
STRAYS = (b"[", b"]", b"{", b"}", b'"', b"'", b",", b"\\", b"\n", b"\r", b"|")
_NUM = re.compile(rb"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def seed_files(fmt: str, max_bytes: int = MAX_SEED_BYTES) -> list[Path]:
    """The real fixtures of ``fmt`` used as seeds (plain files, not the provenance table or
    the generator scripts), sorted by path."""
    out = []
    for p in sorted((FIXTURES / fmt).rglob("*")):
        if not p.is_file() or p.suffix in (".tsv", ".py", ".gz", ".bz2", ".xz"):
            continue
        if p.stat().st_size <= max_bytes:
            out.append(p)
    return out


@dataclass
class Case:
    fmt: str
    index: int
    seed: Path
    kind: str
    data: bytes
    damage: int  # offset of the first changed byte in the (decompressed) content
    truncated: bool = False
    compressed: str = ""  # gz/bz2/xz: the damage is in the compressed bytes
    detail: str = ""

    @property
    def name(self) -> str:
        return self.seed.name + (f".{self.compressed}" if self.compressed else "")


def make_case(fmt: str, index: int, base_seed: int, seeds: list[Path] | None = None,
              cache: dict[Path, bytes] | None = None) -> Case:
    """Case ``index`` of the run seeded ``base_seed``: deterministic, whatever the worker."""
    rng = random.Random(f"{base_seed}:{fmt}:{index}")
    seeds = seeds or seed_files(fmt)
    seed = seeds[rng.randrange(len(seeds))]
    if cache is not None:
        clean = cache.get(seed) or cache.setdefault(seed, seed.read_bytes())
    else:
        clean = seed.read_bytes()
    n = len(clean)
    kinds = ("trunc_pct", "trunc_rand", "flip", "nul", "ff", "utf8", "del_line", "dup_line",
             "number", "stray", "compressed")
    weights = (3, 3, 2, 1, 1, 1, 1, 1, 2, 1, 1)
    kind = rng.choices(kinds, weights)[0]
    pos = rng.randrange(max(n, 1))
    if kind == "trunc_pct":
        pct = rng.randrange(100)
        cut = n * pct // 100
        return Case(fmt, index, seed, kind, clean[:cut], cut, True, detail=f"{pct}%")
    if kind == "trunc_rand":
        return Case(fmt, index, seed, kind, clean[:pos], pos, True, detail=f"at {pos}")
    if kind == "flip":
        bit = 1 << rng.randrange(8)
        data = clean[:pos] + bytes([clean[pos] ^ bit]) + clean[pos + 1:] if n else b"\x01"
        return Case(fmt, index, seed, kind, data, pos, detail=f"bit {bit} at {pos}")
    if kind in ("nul", "ff", "utf8"):
        ins = {"nul": b"\x00", "ff": b"\xff",
               "utf8": rng.choice((b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80", b"\xf8"))}[kind]
        ins *= rng.choice((1, 1, 1, 4, 64))
        return Case(fmt, index, seed, kind, clean[:pos] + ins + clean[pos:], pos,
                    detail=f"{ins[:4]!r}x{len(ins)} at {pos}")
    if kind in ("del_line", "dup_line"):
        lines = clean.splitlines(keepends=True)
        if not lines:
            return Case(fmt, index, seed, kind, clean, n)
        k = rng.randrange(len(lines))
        start = sum(len(x) for x in lines[:k])
        new = lines[:k] + ([] if kind == "del_line" else [lines[k], lines[k]]) + lines[k + 1:]
        return Case(fmt, index, seed, kind, b"".join(new), start, detail=f"line {k + 1}")
    if kind == "number":
        nums = list(_NUM.finditer(clean))
        if not nums:
            return Case(fmt, index, seed, kind, clean, n)
        m = nums[rng.randrange(len(nums))]
        rep = rng.choice(NUMBERS)
        data = clean[:m.start()] + rep + clean[m.end():]
        return Case(fmt, index, seed, kind, data, m.start(),
                    detail=f"{m.group()!r} -> {rep!r} at {m.start()}")
    if kind == "stray":
        ins = rng.choice(STRAYS)
        return Case(fmt, index, seed, kind, clean[:pos] + ins + clean[pos:], pos,
                    detail=f"{ins!r} at {pos}")
    # compressed: a torn .gz/.bz2/.xz copy (truncated, or one byte flipped)
    comp = rng.choice(("gz", "bz2", "xz"))
    packed = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[comp](clean)
    at = rng.randrange(max(len(packed), 1))
    if rng.random() < 0.5:
        data, how = packed[:at], f"cut at {at}/{len(packed)}"
    else:
        data = packed[:at] + bytes([packed[at] ^ 0x10]) + packed[at + 1:] if packed else b""
        how = f"flip at {at}/{len(packed)}"
    return Case(fmt, index, seed, kind, data, 0, compressed=comp, detail=how)


def percent_cases(fmt: str, seed: Path) -> list[Case]:
    """The truncations of ``seed`` at every 1% of its size (0%, 1%, ..., 99%)."""
    clean = seed.read_bytes()
    return [Case(fmt, -1 - pct, seed, "trunc_pct", clean[:len(clean) * pct // 100],
                 len(clean) * pct // 100, True, detail=f"{pct}%") for pct in range(100)]


# --- the oracle ---------------------------------------------------------------------------

LINE_TABLES = {"throughput", "train_metrics", "tiles", "nccl_tests", "nccl_events", "nccl_env",
               "ds_comms", "mllog"}
#: lines before the damage whose rows may be lost (a record wrapped onto the damaged line)
WRAP = 3
#: columns never compared (they depend on what follows, or on the file name)
SKIP_COLS = {
    "source", "fused_tensors", "last_ready", "ranks_ready", "complete",
    # named after the directory or file a copy sits in (a per-rank layout's run)
    "run",
}
KEYS = {
    "hvd_activities": ("pid", "start_us", "depth"),
    "hvd_tensors": ("pid", "op_index"),
    "hvd_ready": ("pid", "rank", "ts_us"),
    "hvd_cycles": ("cycle",),
    "tiles": ("snapshot", "xrdu", "rdu", "tile"),
}
SKIP_TABLES = {"hvd_runs"}


def _norm(v: object) -> object:
    """A hashable, comparable cell: NA/NaN -> None, numbers as float."""
    if v is None:
        return None
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) or type(v).__module__ == "numpy":
        try:
            f = float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return str(v)
        return None if math.isnan(f) else f
    return str(v)


def _rows(df, cols: list[str]) -> list[tuple]:
    """The rows of ``cols`` as tuples of normalised values, built column by column (a
    column's ``tolist`` gives the same Python scalars a row iteration does, at a fraction
    of ``itertuples``' cost: it was 40% of a fuzz run's oracle)."""
    if not cols:
        return [()] * len(df)
    if not len(df):
        return []
    return list(zip(*[[_norm(v) for v in df[c].tolist()] for c in cols], strict=True))


def line_of(data: bytes, offset: int) -> int:
    """1-based line holding byte ``offset`` (lines split at \\n only)."""
    return data.count(b"\n", 0, offset) + 1


def _before(df, limit: int):
    """Rows whose line is before ``limit`` (rows without a line number count as before)."""
    return df["lineno"].fillna(0) < limit


def check_lines(clean_ds, ds, table: str, limit: int, cut_line: int | None,
                flagged: set[int]) -> list[str]:
    """Prefix oracle for a table with a lineno column (see the module doc)."""
    c, d = clean_ds[table], ds[table]
    cols = [x for x in c.columns if x not in SKIP_COLS and x != "command" and x != "user"]
    out = []
    strict = limit - WRAP
    cb = sorted(_rows(c[_before(c, strict)], cols), key=repr)
    db = sorted(_rows(d[_before(d, strict)], cols), key=repr)
    # the WRAP lines just before the damage may hold the start of a record that a copy
    # wrapped onto the damaged line (a Megatron line in a doc): rows there may be lost,
    # never changed or new
    near_c = Counter(_rows(c[_before(c, limit) & ~_before(c, strict)], cols))
    near_d = Counter(_rows(d[_before(d, limit) & ~_before(d, strict)], cols))
    extra = near_d - near_c
    if extra:
        out.append(f"{table}: rows on the {WRAP} lines before line {limit} are not the clean "
                   f"file's: {next(iter(extra))}")
    if cb != db:
        lost = Counter(cb) - Counter(db)
        new = Counter(db) - Counter(cb)
        out.append(f"{table}: rows before line {strict} differ from the clean file's "
                   f"(lost {sum(lost.values())}, changed/new {sum(new.values())}; e.g. "
                   f"lost {next(iter(lost), None)}, new {next(iter(new), None)})")
    if table == "tiles" and "command" in c:
        key = ["snapshot", "xrdu", "rdu", "tile", "lineno"]
        cm = {tuple(_norm(v) for v in r[:-2]): (r[-2], r[-1]) for r in
              c[_before(c, strict)][key + ["command", "user"]].itertuples(index=False)}
        for r in d[_before(d, strict)][key + ["command", "user"]].itertuples(index=False):
            k = tuple(_norm(v) for v in r[:-2])
            if k not in cm:
                continue
            ccmd, cuser = cm[k]
            dcmd, duser = r[-2], r[-1]
            if _norm(dcmd) is not None and not str(_norm(ccmd) or "").startswith(str(dcmd)):
                out.append(f"tiles: command {dcmd!r} is not a prefix of the clean {ccmd!r}")
                break
            if _norm(duser) is not None and _norm(duser) != _norm(cuser):
                out.append(f"tiles: user {duser!r} differs from the clean {cuser!r}")
                break
    if cut_line is not None:
        past = d[d["lineno"].fillna(0) > cut_line]
        if len(past):
            out.append(f"{table}: {len(past)} rows past the cut line {cut_line}")
        on = d[d["lineno"].fillna(0) == cut_line]
        if len(on) and cut_line not in flagged:
            ok = Counter(_rows(c[c["lineno"].fillna(0) == cut_line], cols))
            for r in _rows(on, cols):
                if ok[r] <= 0:
                    out.append(f"{table}: the cut line {cut_line} gave {r}, not a clean row, "
                               "and no problem flags that line")
                    break
                ok[r] -= 1
    return out


#: Horovod columns measured from the file's earliest ts (``hvd_runs.ts_offset_us``)
HVD_TIMES = {"hvd_activities": ("start_us",), "hvd_tensors": ("start_us",),
             "hvd_ready": ("ts_us",), "hvd_cycles": ("ts_us",)}


class _Tables(dict):
    """Tables by name; a table not held is the Dataset's (an empty frame of its schema)."""

    def __init__(self, ds) -> None:
        super().__init__((t, ds[t]) for t in ds.tables)
        self.ds = ds

    def __missing__(self, table: str):
        return self.ds[table]


def raw_clock(ds) -> dict:
    """``ds``'s tables with Horovod times put back on the file's own clock (``ts_us +
    hvd_runs.ts_offset_us``: the ts the file states). Horovod times are relative to the
    earliest event; a damaged ts that becomes the earliest moves that origin and so every
    relative time, never a time the file states (see the module doc)."""
    tables = _Tables(ds)
    runs = tables.get("hvd_runs")
    if runs is None or not len(runs):
        return tables
    offsets = runs.set_index("source")["ts_offset_us"].astype("float64")
    for t, cols in HVD_TIMES.items():
        if t in tables:
            df = tables[t].copy()
            off = df["source"].astype("object").map(offsets).astype("float64").fillna(0.0)
            for c in cols:
                df[c] = df[c].astype("float64") + off
            tables[t] = df
    return tables


def check_keyed(sub_ds, sup_ds, table: str, what: str) -> list[str]:
    """Every row of ``sub_ds[table]`` matches a row of ``sup_ds[table]`` with the same key
    whose values agree wherever the sub row has one."""
    from dptrace import schema

    s, p = sub_ds[table], sup_ds[table]
    if not len(s):
        return []
    key = list(KEYS.get(table) or [k for k in schema.TABLES[table].key if k != "source"])
    cols = [x for x in s.columns if x not in SKIP_COLS and x not in key
            and x not in ("lineno", "command")]
    if table in ("hvd_activities", "hvd_ready", "hvd_tensors"):
        cols = [x for x in cols if x != "op_index"]
    if "job" in key:   # a doc pasting k profiles names them job#1..#k; a prefix may hold one
        s, p = (x.assign(job=x["job"].astype("object").map(
            lambda v: re.sub(r"#\d+$", "", v) if isinstance(v, str) else v)) for x in (s, p))
    index: dict[tuple, list[tuple]] = {}
    for k, v in zip(_rows(p, key), _rows(p, cols), strict=True):
        index.setdefault(k, []).append(v)
    for k, v in zip(_rows(s, key), _rows(s, cols), strict=True):
        cands = index.get(k)
        if not cands:
            return [f"{table}: {what} row with key {dict(zip(key, k, strict=True))} "
                    "has no counterpart"]
        if not any(all(a is None or a == b for a, b in zip(v, cand, strict=True))
                   for cand in cands):
            diff = {c: (a, b) for c, a, b in zip(cols, v, cands[0], strict=True)
                    if a is not None and a != b}
            return [f"{table}: {what} row {dict(zip(key, k, strict=True))} differs: {diff}"]
    return []


@dataclass
class Result:
    index: int
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    maxrss_kib: int = 0
    status: str = ""


def run_case(case: Case, workdir: Path, clean_cache: dict, render: bool = True) -> Result:
    """Write ``case`` to ``workdir`` under its seed's name, load, check, render."""
    import dptrace
    from dptrace.reports import model

    t0 = time.perf_counter()
    res = Result(case.index)
    sub = workdir / f"{case.fmt}-c{case.index}-{os.getpid()}"
    sub.mkdir(parents=True, exist_ok=True)
    path = sub / case.name
    path.write_bytes(case.data)
    try:
        try:
            ds = dptrace.load(str(path))
        except Exception as exc:
            res.failures.append(f"load raised {type(exc).__name__}: {exc} "
                                f"[{_where(exc)}]")
            return res
        res.failures += _invariants(ds, str(path), case)
        code = model.exit_code(ds)
        if code not in (0, 1, 3):
            res.failures.append(f"exit code {code}")
        res.status = str(ds.sources["status"].iloc[0]) if len(ds.sources) else "?"
        if not case.compressed:
            try:
                res.failures += _prefix_oracle(case, ds, clean_cache)
            except Exception as exc:
                res.failures.append(f"oracle raised {type(exc).__name__}: {exc} "
                                    f"[{_where(exc)}]")
        if render:
            res.failures += _render(path, sub, code)
    finally:
        for p in sorted(sub.iterdir()):
            p.unlink()
        sub.rmdir()
        res.seconds = time.perf_counter() - t0
        res.maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return res


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in tb if "dptrace" in f.filename and "scripts" not in f.filename]
    f = (inside or tb)[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno}"


def _invariants(ds, name: str, case: Case) -> list[str]:
    return invariants(ds, name, None if case.compressed else case.data)


#: what each status allows: (rows may be > 0, rows may be 0, an error problem allowed,
#: an error problem required)
_STATUS_RULES = {
    "ok": (True, False, False, False),
    "partial": (True, True, True, True),   # "something skipped": perhaps all of it
    "empty": (False, True, False, False),
    "failed": (False, True, True, False),
    "unknown": (False, True, True, False),
    "skipped": (False, True, True, False),
}


def _line_bound(data: bytes) -> int:
    """The most lines ``data`` can be read as (``\n``, ``\r`` or any ``str.splitlines``
    break, UTF-8, Latin-1 or UTF-16 text): a problem's line is at most this plus one."""
    n = max(data.count(b"\n"), data.count(b"\r"))
    for enc in ("utf-8", "latin-1", "utf-16-le", "utf-16-be"):
        n = max(n, len(data.decode(enc, "replace").splitlines()))
    return n + 1


def invariants(ds, name: str, data: bytes | None = None) -> list[str]:
    """Invariants 1-3 of the module doc on the Dataset of one input named ``name``
    (``data``: its bytes as written, for the bound on problem lines; None for a compressed
    copy): one sources row naming it, every problem naming it with a line >= 1 (and within
    the file), a known status, no parser crash caught by load, and rows and problems
    consistent: ``sources.rows`` is the number of rows of the input in the tables, and the
    status agrees with it and with the input's error problems (ok: rows and no error;
    partial: an error, with rows or none: "something skipped"; empty: no rows, no error;
    failed, unknown, skipped: no rows)."""
    out = []
    if len(ds.sources) != 1:
        out.append(f"{len(ds.sources)} sources rows for one input")
    elif ds.sources["source"].iloc[0] != name:
        out.append(f"sources row names {ds.sources['source'].iloc[0]!r}")
    bad = ds.problems[ds.problems["source"] != name]
    if len(bad):
        out.append(f"problem not naming the file: {bad['source'].iloc[0]!r}")
    lines = ds.problems["line"].dropna()
    if len(lines) and int(lines.min()) < 1:
        out.append(f"problem line {int(lines.min())} < 1")
    if len(lines) and data is not None and int(lines.max()) > _line_bound(data):
        out.append(f"problem line {int(lines.max())} past the end of the input "
                   f"({_line_bound(data) - 1} lines)")
    status = ds.sources["status"].iloc[0] if len(ds.sources) else None
    if status not in _STATUS_RULES:
        out.append(f"status {status!r}")
    elif len(ds.sources) == 1:
        rows = int(ds.sources["rows"].iloc[0])
        in_tables = sum(int((ds[t]["source"] == name).sum()) for t in ds.tables
                        if "source" in ds[t].columns)
        if rows != in_tables:
            out.append(f"sources.rows says {rows}, the tables hold {in_tables} rows")
        errors = int((ds.problems["severity"] == "error").sum())
        some, none, err_ok, err_needed = _STATUS_RULES[status]
        if rows and not some or not rows and not none:
            out.append(f"status {status} with {rows} rows")
        if errors and not err_ok:
            out.append(f"status {status} with {errors} error problems: "
                       f"{ds.problems[ds.problems['severity'] == 'error']['message'].iloc[0]!r}"
                       [:300])
        if err_needed and not errors:
            out.append(f"status {status} and no error problem")
    msgs = " ".join(ds.problems["message"].astype(str))
    if "parser failed" in msgs or "please report" in msgs:
        m = re.search(r"(\w+ parser failed: [^()]*\(at [^)]*\))", msgs)
        out.append(f"parser crash contained: {m.group(1) if m else msgs[:200]}")
    return out


def _clean(case: Case, cache: dict):
    """The clean seed, read as the damaged copies are: a file of the seed's name alone in a
    directory of its own (what a file's path says, a per-rank layout's rank, the run named
    after it, is then the same for both)."""
    import shutil
    import tempfile

    import dptrace

    if case.seed not in cache:
        sub = Path(tempfile.mkdtemp(prefix="fuzz-clean-"))
        try:
            path = sub / case.seed.name
            shutil.copyfile(case.seed, path)
            cache[case.seed] = dptrace.load(str(path))
        finally:
            shutil.rmtree(sub, ignore_errors=True)
    return cache[case.seed]


def _prefix_ds(case: Case, data: bytes, workdir: Path):
    import dptrace

    sub = workdir / f"{case.fmt}-p{case.index}-{os.getpid()}"
    sub.mkdir(parents=True, exist_ok=True)
    path = sub / case.name
    path.write_bytes(data)
    try:
        return dptrace.load(str(path))
    finally:
        path.unlink()
        sub.rmdir()


def _prefix_oracle(case: Case, ds, cache: dict) -> list[str]:
    clean_ds = _clean(case, cache)
    if not len(clean_ds.sources) or not len(ds.sources):
        return []
    cfmt, dfmt = (str(x.sources["format"].fillna("").iloc[0]) for x in (clean_ds, ds))
    if cfmt != dfmt or case.fmt not in cfmt:
        return []  # detected as something else: not comparable
    clean = cache.get(("bytes", case.seed)) or cache.setdefault(("bytes", case.seed),
                                                                case.seed.read_bytes())
    out: list[str] = []
    limit = line_of(clean, case.damage)
    flagged = {int(x) for x in ds.problems["line"].dropna()}
    tables = set(clean_ds.tables) | set(ds.tables)
    # a table whose rows lack line numbers on either side (the sntilestat quick route leaves
    # tiles.lineno null) is compared by key instead
    by_line = {t for t in tables & LINE_TABLES
               if not clean_ds[t]["lineno"].isna().any() and not ds[t]["lineno"].isna().any()}
    for t in sorted(by_line):
        out += check_lines(clean_ds, ds, t, limit, limit if case.truncated else None, flagged)
    keyed = sorted(t for t in tables - by_line if t not in SKIP_TABLES
                   and (t.startswith("mpi_") or t.startswith("hvd_") or t == "tiles"))
    if not keyed:
        return out
    if case.truncated:
        nlines = case.data.count(b"\n") + (0 if case.data.endswith(b"\n") else 1)
        if nlines in flagged or not case.data.strip():
            return out
        for t in keyed:
            out += check_keyed(raw_clock(ds), raw_clock(clean_ds), t, "truncated")
    else:
        cut = case.damage if case.fmt == "horovod" else clean.rfind(b"\n", 0, case.damage) + 1
        tmp = Path(tempfile.mkdtemp(prefix="dptrace-prefix-"))
        try:
            pre = _prefix_ds(case, clean[:cut], tmp)
        finally:
            os.rmdir(tmp)
        for t in keyed:
            out += check_keyed(raw_clock(pre), raw_clock(ds), t, "untouched-prefix")
    return out


def _render(path: Path, sub: Path, code: int) -> list[str]:
    from dptrace import cli

    out = []
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()) as err:
            got = cli.main(["report", str(path), "--json", str(sub / "r.json"),
                            "--html", str(sub / "r.html"), "--width", "100"])
    except SystemExit as exc:
        return [f"cli exited {exc.code}"]
    except Exception as exc:
        return [f"cli raised {type(exc).__name__}: {exc} [{_where(exc)}]"]
    lines = [x for x in err.getvalue().splitlines() if "internal error" in x]
    if lines:
        out.append("cli internal error: " + lines[0][:200])
    if got != code:
        out.append(f"cli exit code {got}, Dataset says {code}")
    if not (sub / "r.html").exists() or not (sub / "r.json").exists():
        out.append("cli wrote no HTML/JSON")
    return out


# --- signatures and the driver ------------------------------------------------------------

def signature(failure: str) -> str:
    """A failure with the numbers taken out: one signature per distinct bug."""
    s = re.sub(r"'[^']*'", "'…'", failure)
    s = re.sub(r"\d+(\.\d+)?", "N", s)
    return s[:160]


def _worker(fmt_list, base_seed, render, tasks, results, workdir):
    seeds = {f: seed_files(f) for f in fmt_list}
    cache: dict = {}
    byte_cache: dict = {}
    while True:
        item = tasks.get()
        if item is None:
            return
        fmt, i = item
        case = make_case(fmt, i, base_seed, seeds[fmt], byte_cache)
        try:
            res = run_case(case, Path(workdir), cache, render)
        except Exception as exc:  # the harness itself: report, do not die
            res = Result(i, [f"harness raised {type(exc).__name__}: {exc} [{_where(exc)}]"])
        results.put((fmt, res))


def save_failure(out: Path, case: Case, failures: list[str]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{case.fmt}-{case.index:08d}-{case.kind}"
    d = out / stem
    d.mkdir(exist_ok=True)
    (d / case.name).write_bytes(case.data)
    (d / "README.txt").write_text(
        f"seed file: {case.seed.relative_to(ROOT)}\nmutation: {case.kind} {case.detail}\n"
        f"damage offset: {case.damage}\nfailures:\n" + "".join(f"  {f}\n" for f in failures)
        + f"reproduce: dptrace report '{d / case.name}'\n", encoding="utf-8")
    return d


def main(argv: list[str] | None = None) -> int:
    import multiprocessing as mp

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="cases per format")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this long (0: never)")
    ap.add_argument("--format", default="all", help="trainlog, mpitrace, horovod, sntilestat, "
                    "nccltests, nccl, torchtrace, mpip, dscomms, mllog or all "
                    "(comma-separated list accepted)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--only", type=int, help="run case N alone, in this process, and print it")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case (a hang)")
    ap.add_argument("--no-render", action="store_true", help="skip the CLI/report rendering")
    ap.add_argument("--out", default="fuzz-failures", help="directory for failing inputs")
    ap.add_argument("--keep", type=int, default=3, help="inputs kept per distinct failure")
    args = ap.parse_args(argv)
    fmts = list(FORMATS) if args.format == "all" else args.format.split(",")
    for f in fmts:
        if f not in FORMATS:
            ap.error(f"unknown format {f!r}")
    out = Path(args.out)
    if args.only is not None:
        for f in fmts:
            case = make_case(f, args.only, args.seed)
            with tempfile.TemporaryDirectory() as tmp:
                res = run_case(case, Path(tmp), {}, not args.no_render)
            print(f"{f} case {args.only}: {case.seed.name} {case.kind} {case.detail}: "
                  f"{res.failures or 'ok'}")
            if res.failures:
                print("saved to", save_failure(out, case, res.failures))
        return 0
    ctx = mp.get_context("fork")
    jobs = [(f, i) for i in range(args.start, args.start + args.cases) for f in fmts]
    jobs.reverse()  # pop() from the end
    workdir = tempfile.mkdtemp(prefix="dptrace-fuzz-")
    results = ctx.Queue()

    class W:  # one worker process, its own task queue, the case it runs
        def __init__(self) -> None:
            self.tasks = ctx.Queue()
            self.proc = ctx.Process(target=_worker, args=(fmts, args.seed, not args.no_render,
                                                          self.tasks, results, workdir),
                                    daemon=True)
            self.proc.start()
            self.case: tuple[str, int] | None = None
            self.since = 0.0

    workers = [W() for _ in range(args.workers)]
    t0 = last_print = time.time()
    done = crashes = hangs = 0
    peak = 0
    sigs: Counter[str] = Counter()
    examples: dict[str, str] = {}
    per_fmt: Counter[str] = Counter()

    def record(fmt: str, index: int, failures: list[str]) -> None:
        case = make_case(fmt, index, args.seed)
        for f in failures:
            sig = f"{fmt}: {signature(f)}"
            sigs[sig] += 1
            if sigs[sig] <= args.keep:
                where = save_failure(out, case, failures)
                examples.setdefault(sig, f"{where} :: {f[:300]}")

    while True:
        stop = bool(args.minutes) and time.time() - t0 > args.minutes * 60
        for w in workers:
            if w.case is None and jobs and not stop:
                w.case, w.since = jobs.pop(), time.time()
                w.tasks.put(w.case)
        if all(w.case is None for w in workers):
            break
        try:
            fmt, res = results.get(timeout=0.5)
        except Exception:
            fmt, res = "", None
        if res is not None:
            for w in workers:
                if w.case == (fmt, res.index):
                    w.case = None
            done += 1
            per_fmt[fmt] += 1
            peak = max(peak, res.maxrss_kib)
            if res.failures:
                crashes += any("raised" in f for f in res.failures)
                record(fmt, res.index, res.failures)
        now = time.time()
        for k, w in enumerate(workers):
            if w.case is None:
                continue
            late = now - w.since > args.timeout
            dead = not w.proc.is_alive()
            if late or dead:
                if late:
                    hangs += 1
                    w.proc.kill()
                else:
                    crashes += 1
                w.proc.join()
                why = (f"hang (> {args.timeout:g} s)" if late
                       else f"worker died (exit code {w.proc.exitcode})")
                record(w.case[0], w.case[1], [why])
                done += 1
                workers[k] = W()
        if now - last_print > 30:
            last_print = now
            el = now - t0
            print(f"[{el:7.0f} s] {done} cases ({done / el:.1f}/s), {len(sigs)} distinct "
                  f"failures, {crashes} crashes, {hangs} hangs, peak RSS {peak / 1024:.0f} MiB",
                  flush=True)
    for w in workers:
        w.tasks.put(None)
    for w in workers:
        w.proc.join(timeout=5)
        if w.proc.is_alive():
            w.proc.kill()
    el = time.time() - t0
    print(f"\n{done} cases in {el:.0f} s ({done / max(el, 1e-9):.1f} cases/s) with "
          f"{args.workers} workers: {dict(per_fmt)}")
    print(f"crashes (load/CLI raised): {crashes}; hangs: {hangs}; peak RSS of a worker: "
          f"{peak / 1024:.0f} MiB")
    print(f"{len(sigs)} distinct failures:")
    for sig, n in sigs.most_common():
        print(f"  {n:6d}  {sig}\n          e.g. {examples.get(sig, '')}")
    return 1 if sigs else 0


if __name__ == "__main__":
    sys.exit(main())
