"""Snapshots: the Dataset of what was read so far, built the way ``dptrace.load`` builds it,
and what the report would say of it now, plus the findings only a live job has.

:func:`dataset` follows the loader's steps (detect, status, settle, conform, runs) with the
tables of each file's incremental readers in place of a read of the whole file; its tables
equal those of ``dptrace.load`` on the bytes read (tests/test_watch_replay.py). The
analysis runs on it through the ordinary context (:class:`dptrace.analyses.Analyses`,
:func:`dptrace.findings.build`).
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from .follow import Follower, Tail

#: a printer is stopped when it has printed nothing for this many times its usual interval
#: (and for at least two refresh intervals)
STOPPED_FACTOR = 10.0
#: a throughput drop: the recent figure this share below the steady one (or the baseline)
DROP_SHARE = 0.2
#: refreshes the recent figure of a drop is taken over
RECENT_REFRESHES = 3
#: figures printed (recent ones and before them) a drop needs at least
MIN_ROWS = 3
#: the ordinary findings (:func:`dptrace.findings.build`, every rule over every row) are
#: built again at a refresh when the Dataset has at most this many training-log rows, ...
FINDINGS_ALWAYS_ROWS = 50_000
#: ... or its training-log rows grew by this share since they were last built, ...
FINDINGS_GROWTH = 0.25
#: ... or this many seconds (of the watch's clock) passed since, or another table changed
#: (see :meth:`Live.ordinary_due`)
FINDINGS_EVERY_S = 300.0
#: the tables whose growth alone does not make the ordinary findings due (a training log's:
#: they grow at every refresh)
GROWING_TABLES = frozenset({"throughput", "train_metrics"})


def dataset(follower: Follower, final: bool = False) -> Dataset:
    """The Dataset of everything read so far (``final``: lines still without a newline read
    as the files' ends), by the loader's rules (:func:`dptrace.loader.assemble`: status,
    settle, conform, runs, on the incremental readers' tables)."""

    tails = [follower.tails[k] for k in follower.order if k in follower.tails]
    results = [follower.results(t, final) if t.src.unreadable is None else None
               for t in tails]
    return _assemble(follower, tails, results)


def _assemble(follower: Follower, tails: list[Any], results: list[Any]) -> Dataset:
    """The loader's steps after parsing (:func:`dptrace.loader.assemble`) on the readers'
    ``results`` of ``tails``: each log's launcher from its head, the arguments when every
    input's origin is known."""
    from .. import loader
    from ..sources import HEAD_BYTES

    launchers: dict[str, str] = {}
    for tail, got in zip(tails, results, strict=True):
        if got is not None and any(fmt in loader._LOGS for fmt, _ in got):
            seen = _launcher(tail, HEAD_BYTES)
            if seen:
                launchers[tail.src.name] = seen
    origins = follower.origins if len(follower.origins) == len(tails) else None
    return loader.assemble([t.src for t in tails], results, list(follower.expand_problems),
                           arguments=follower.arguments if origins else None,
                           origins=origins, launchers=launchers,
                           unread="not read yet: still written")


@dataclass
class _Folded:
    """What a refresh's job figure reads when the training logs' rows are folded
    (:func:`folded`): the reduced Dataset, the per-instance table, each folded group's
    values (views taken under the follower's lock) and warm-up rows, the rows of the
    training-log tables the whole Dataset would hold."""

    ds: Dataset
    instances: pd.DataFrame | None
    values: dict[str, dict[tuple, tuple[np.ndarray, int]]]
    growing: int


def folded(follower: Follower, warmup: float, final: bool = False) -> _Folded | None:
    """The Dataset a refresh's job figure is made from without reading every row: the
    loader's steps (:func:`dptrace.loader.assemble`: the runs table, its facts) on each
    training log's reduced tables (:meth:`.pieces.TrainlogState.reduced`: the first row of
    each distinct key, every row of a series without steps, the step times, the line being
    written), and the per-instance table from each log's fold
    (:func:`dptrace.formats.trainlog.throughput.per_instance_folded`); the other formats'
    tables whole. None when that would not be the report's figure (a log not read part by
    part or with several runs, an MLPerf log, a job of several inputs or of per-rank files:
    :func:`dptrace.formats.trainlog.job.takes_given`): then the whole Dataset is analysed."""
    from ..formats.trainlog import job as jobfig
    from ..formats.trainlog import throughput as thr

    tails = [follower.tails[k] for k in follower.order if k in follower.tails]
    results: list[Any] = []
    folds: dict[str, Any] = {}
    growing = 0
    for tail in tails:
        if tail.src.unreadable is not None:
            results.append(None)
            continue
        got = follower.reduced_results(tail, final)
        if got is False:
            return None
        res, fold, full = got
        results.append(res)
        if fold is not None:
            folds[tail.src.name] = fold
        for fmt, r in res or ():
            for name in GROWING_TABLES:
                if name in r.tables:
                    growing += full.get(name, len(r.tables[name])) if fmt == "trainlog" \
                        else len(r.tables[name])
    ds = _assemble(follower, tails, results)
    if "mllog" in ds.tables and len(ds["mllog"]):
        return None
    inst = None
    values: dict[str, dict[tuple, tuple[np.ndarray, int]]] = {}
    if "throughput" in ds.tables and len(ds["throughput"]):
        tp = ds["throughput"]
        metrics = ds["train_metrics"] if "train_metrics" in ds.tables else None
        if not jobfig.takes_given(tp, metrics):
            return None
        figs = {name: fold.figures(warmup) for name, fold in folds.items()}
        inst = thr.per_instance_folded(tp, lambda key: figs.get(key[0], {}).get(key))
        if inst is None:
            return None
        for name, fold in folds.items():
            values[name] = {key: (g.values.view(), figs[name][key][1])
                            for key, g in fold.groups.items()}
    return _Folded(ds, inst, values, growing)


def _launcher(tail: Tail, head_bytes: int) -> str | None:
    """:func:`dptrace.runs.launcher_in` of the file's head, kept once the head is whole."""
    from ..runs import launcher_in

    if tail.launcher is not None:
        return tail.launcher[0]
    try:
        with open(tail.src.path, "rb") as fh:
            head = fh.read(min(head_bytes, tail.offset + len(tail.pending)))
    except OSError:
        return None
    seen = launcher_in(head)
    if len(head) >= head_bytes:
        tail.launcher = (seen,)
    return seen


@dataclass
class Snapshot:
    """What the report would say now. ``job``: the job figure per run and metric (after
    warm-up), ``instances``: the per-instance figures of each job figure's series (the
    straggler marked), ``findings``: the ordinary findings and the live ones, ``files``:
    how far each input was read."""

    time: float
    elapsed_s: float
    files: list[dict[str, Any]]
    job: list[dict[str, Any]]
    instances: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    notes: list[str]
    dataset: Dataset | None = field(default=None, repr=False)
    cost_s: float = 0.0
    final: bool = False
    #: ``elapsed_s`` of the refresh whose Dataset the ordinary findings were built from
    #: (this one's, or an earlier one's: :meth:`Live.ordinary_due`)
    findings_elapsed_s: float | None = None
    #: whether the job figure came from the training logs' folds (:func:`folded`), not
    #: from the whole Dataset
    folded: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one refresh (``--jsonl``)."""
        return {"time": self.time, "elapsed_s": round(self.elapsed_s, 3), "final": self.final,
                "files": self.files, "job": self.job, "instances": self.instances,
                "findings": self.findings, "notes": self.notes,
                "findings_elapsed_s": None if self.findings_elapsed_s is None
                else round(self.findings_elapsed_s, 3),
                "cost_s": round(self.cost_s, 4)}

    def figure(self, metric: str | None = None) -> float | None:
        """The first job figure (of ``metric``), or None."""
        for row in self.job:
            if metric is None or row["metric"] == metric:
                return row["value"]
        return None


def _num(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        v = v.item()
    return v


class Live:
    """What spans snapshots: each printer's rhythm, the job figure's history, the baseline."""

    def __init__(self, baseline: Dataset | None = None, warmup: float = 0.1,
                 thresholds: dict[str, float] | None = None, interval: float = 5.0,
                 stopped_factor: float = STOPPED_FACTOR, drop_share: float = DROP_SHARE,
                 datasets: float | None = None, fold: bool = True) -> None:
        self.warmup, self.thresholds, self.interval = warmup, thresholds or {}, interval
        #: a snapshot's whole Dataset (``Snapshot.dataset``) is built when the ordinary
        #: findings are, at the final snapshot, and when this many seconds passed since the
        #: last one was (0: at every snapshot; None: never else)
        self.datasets = datasets
        self._dataset_at = -1e18
        #: the job figure from the training logs' folds (:func:`folded`) where it is the
        #: report's; False: from the whole Dataset at every refresh
        self.fold = fold
        self.stopped_factor, self.drop_share = stopped_factor, drop_share
        self.baseline = _baseline_figures(baseline, warmup) if baseline is not None else {}
        #: per refresh: {(run, metric): value}
        self.history: list[dict[tuple[str, str], float]] = []
        #: per refresh: {(source, metric): {file: figures printed}} of each job figure's series
        self.sums: list[dict[tuple[str, str], dict[Any, int]]] = []
        #: the ordinary findings last built: (elapsed s, training-log rows, the other
        #: tables' rows, the rows of the findings)
        self.ordinary: tuple[float, int, dict[str, Any], list[dict[str, Any]]] | None = None

    def snapshot(self, follower: Follower, started: float, final: bool = False,
                 now: float | None = None, lock: Any = None,
                 clock: Callable[[], float] = time.monotonic) -> Snapshot:
        """The snapshot of what ``follower`` has read. ``lock``: held while the follower's
        state is read (a poller thread feeds it meanwhile); the analysis runs without it.
        ``now``: the time of the snapshot (default: ``clock()`` once the lock is held)."""
        from .. import memory
        from ..analyses import Analyses
        from ..findings import build as build_findings

        t0 = time.thread_time()
        options = {"warmup": self.warmup, "thresholds": self.thresholds}
        ds: Dataset | None
        a: Analyses | None
        with lock if lock is not None else contextlib.nullcontext():
            now = clock() if now is None else now
            elapsed = now - started
            fast = folded(follower, self.warmup, final) if self.fold else None
            if fast is not None:
                growing, others = fast.growing, _table_rows(fast.ds)[1]
                due = self.ordinary_due(elapsed, growing, others, final)
                whole = due or (self.datasets is not None
                                and elapsed - self._dataset_at >= self.datasets)
                ds = dataset(follower, final) if whole else None
            else:
                ds = dataset(follower, final)
                growing, others = _table_rows(ds)
                due = self.ordinary_due(elapsed, growing, others, final)
            if ds is not None:
                self._dataset_at = elapsed
            stopped = self._stopped(follower, now)
            files = [{"file": t.name, "read_bytes": t.read_bytes, "size_bytes": t.size,
                      "formats": list(t.formats or ()),
                      "idle_s": round(now - t.last_growth, 1)}
                     for t in (follower.tails[k] for k in follower.order if k in follower.tails)]
            notes = list(follower.notes)
        was_folded = fast is not None
        if fast is not None:
            given = {"throughput.instances": fast.instances} if fast.instances is not None \
                else {}
            a = Analyses(fast.ds, options, tables=given)
            job = _job_rows(a)
            instances = _instance_rows(a, job)
            drops = self._drop_folded(fast.values, job)
            del a, fast
            a = Analyses(ds, options) if due and ds is not None else None
        else:
            assert ds is not None
            a = Analyses(ds, options)
            job = _job_rows(a)
            instances = _instance_rows(a, job)
            drops = self._drop(a, job)
        if due:
            assert a is not None
            found = build_findings(a)
            self.ordinary = (elapsed, growing, others, [
                {"kind": str(r.kind), "severity": str(r.severity), "run": _num(r.run),
                 "subject": _num(r.subject), "value": _num(r.value),
                 "threshold": _num(r.threshold), "message": str(r.message)}
                for r in found.itertuples()])
            del found
        assert self.ordinary is not None
        rows = stopped + drops + [dict(r) for r in self.ordinary[3]]
        for j in job:
            j["trend"] = [h.get((j["run"], j["metric"])) for h in self.history[-11:]] + \
                [j["value"]]
        self.history.append({(j["run"], j["metric"]): j["value"] for j in job})
        del self.history[:-50]
        del a
        # the analysis' temporaries: pandas' frames left in reference cycles wait for the
        # collector's oldest generation, seldom run, with their columns (a 300 MB dense log:
        # 290 MB resident between snapshots without this, 206 MB with it); then their pages
        # go back to the system
        # (a refresh whose job figure came from the folds made small frames only: the
        # younger generations hold them; a full collection walks every object the readers
        # keep, ~70 ms at 300 MB of the dense log)
        if ds is not None:
            gc.collect()
        else:
            gc.collect(1)
        # (the free pages of the C heap back to the system at every refresh of a large log:
        # the reads since the last one left holes of their temporaries, the fold's arrays
        # grew; without it a refresh from the folds trimmed nothing, and the resident set
        # of the dense log's 20-minute replay was 249 MB at 905 MB read instead of 212)
        memory.release(sum(len(ds[k]) for k in ds.tables) if ds is not None else growing)
        return Snapshot(time.time(), elapsed, files, job, instances, rows, notes, ds,
                        time.thread_time() - t0, final, self.ordinary[0], was_folded)

    def ordinary_due(self, elapsed: float, growing: int, others: dict[str, Any],
                     final: bool) -> bool:
        """Whether a refresh builds the ordinary findings (every rule of
        :func:`dptrace.findings.build` over the whole Dataset: a cost that grows with the rows
        read) again, or shows those of the refresh they were last built at.

        They are built at the first and the final snapshot; whenever a table other than the
        training log's (:data:`GROWING_TABLES`) has gained or lost rows or appeared (an NCCL
        INFO line: the socket-fallback finding within one refresh), or a fact of a run
        changed (a run appeared, its world size was stated); while the training-log
        rows are at most :data:`FINDINGS_ALWAYS_ROWS` (cheap: every refresh); and else once
        those rows grew by :data:`FINDINGS_GROWTH` since the last build or
        :data:`FINDINGS_EVERY_S` seconds passed. So over a long job their CPU adds up to a
        few times one build on the final rows (geometric growth) plus one build per
        :data:`FINDINGS_EVERY_S`, not one per refresh. The job figure, the per-instance
        figures and the live findings are made at every refresh."""
        last = self.ordinary
        if final or last is None or growing <= FINDINGS_ALWAYS_ROWS or others != last[2]:
            return True
        return growing >= (1 + FINDINGS_GROWTH) * last[1] or \
            elapsed - last[0] >= FINDINGS_EVERY_S

    # --- live findings --------------------------------------------------------------------

    def _stopped(self, follower: Follower, now: float) -> list[dict[str, Any]]:
        """Printers (a rank of a log, by its launcher prefix; a file without prefixes, which
        prints while it grows) that printed no training rows for :data:`STOPPED_FACTOR`
        times their usual interval (the median time between the passes that found their
        rows) and at least two refresh intervals, while another printer still prints."""
        printers = [(tail, who, seen) for tail in follower.tails.values()
                    for who, seen in tail.printed.items()]
        out = []
        for tail, who, (_, last, gaps) in printers:
            if len(gaps) < 2:
                continue
            usual = max(statistics.median(gaps), 1e-3)
            # a file that is its printer (no launcher prefixes: a rank's own log) prints
            # while it grows, rows or not (a long line being written, closing lines)
            quiet = now - (max(last, tail.last_growth) if not who else last)
            if quiet < self.stopped_factor * usual or quiet < 2 * self.interval:
                continue
            fresh = max(2 * usual, 2 * self.interval)
            if not any(now - s[1] < fresh for t, w, s in printers if (t, w) != (tail, who)):
                continue   # nobody prints: the job ended or paused, not one printer
            name = _who(tail.name, who)
            out.append({"kind": "live_stopped_printing", "severity": "warning", "run": None,
                        "subject": name, "value": quiet, "threshold": usual,
                        "message": f"{name} has printed nothing for {_dur(quiet)}; it "
                                   f"printed every {_dur(usual)}"})
        return out

    def _drop(self, a: Any, job: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A throughput drop: the mean of the figures printed since the last
        :data:`RECENT_REFRESHES` refreshes against the run's own steady state (the median of
        the figures after warm-up printed before them), or the job figure against the
        baseline's."""
        out = []
        rows = a["throughput.rows"]
        marks: dict[tuple[str, str], dict[str, int]] = {}
        old = self.sums[-RECENT_REFRESHES] if len(self.sums) >= RECENT_REFRESHES else None
        for j in job:
            key = (j["source"] or "", j["metric"])
            got = _series_files(rows, j) if rows is not None and not rows.empty else None
            if got is None:
                continue
            names, codes, value = got
            per = np.bincount(codes, minlength=len(names))
            marks[key] = {names[c]: int(n) for c, n in enumerate(per.tolist()) if n}
            if old is None or key not in old:
                continue
            at = _position_in_group(codes)   # each row's position among its file's rows
            seen = np.array([old[key].get(n, 0) for n in names], dtype=np.int64)[codes]
            steady = np.arange(len(codes)) >= int(len(codes) * a.warmup)
            new = (at >= seen) & steady & ~np.isnan(value)
            before = ~(at >= seen) & steady & ~np.isnan(value)
            if new.sum() < MIN_ROWS or before.sum() < MIN_ROWS:
                continue
            mean, ref = float(value[new].mean()), float(np.median(value[before]))
            if ref > 0 and mean < (1 - self.drop_share) * ref:
                out.append(self._drop_row(j, mean, ref, int(new.sum())))
        self.sums.append(marks)
        del self.sums[:-RECENT_REFRESHES - 1]
        return out + self._below_baseline(job)

    def _drop_folded(self, values: dict[str, dict[tuple, tuple[np.ndarray, int]]],
                     job: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`_drop` from the folds (:func:`folded`): a series' figures are those of its
        instances (training rows of its file, metric, pattern and name), each in its order;
        the steady ones are each instance's after its warm-up cut (the job figure's), the
        recent ones those after the instance's count :data:`RECENT_REFRESHES` refreshes ago.
        It reads the kept values of the job figures' series only (8 bytes a row; the median
        of the steady ones before is a pass over them)."""
        out = []
        marks: dict[tuple[str, str], dict[Any, int]] = {}
        old = self.sums[-RECENT_REFRESHES] if len(self.sums) >= RECENT_REFRESHES else None
        for j in job:
            key = (j["source"] or "", j["metric"])
            groups = [(k, v, cut) for k, (v, cut) in values.get(str(j["source"]), {}).items()
                      if k[4] == j["metric"] and k[6] == "train"
                      and (j.get("pattern") is None or k[1] == str(j["pattern"]))
                      and (j.get("name") is None or k[2] == str(j["name"]))]
            if not groups:
                continue
            marks[key] = {k: len(v) for k, v, _ in groups}
            if old is None or key not in old:
                continue
            seen = old[key]
            new = np.concatenate([v[max(seen.get(k, 0), cut):] for k, v, cut in groups])
            before = np.concatenate([v[cut:max(seen.get(k, 0), cut)] for k, v, cut in groups])
            new, before = new[~np.isnan(new)], before[~np.isnan(before)]
            if len(new) < MIN_ROWS or len(before) < MIN_ROWS:
                continue
            mean, ref = float(new.mean()), float(np.median(before))
            if ref > 0 and mean < (1 - self.drop_share) * ref:
                out.append(self._drop_row(j, mean, ref, len(new)))
        self.sums.append(marks)
        del self.sums[:-RECENT_REFRESHES - 1]
        return out + self._below_baseline(job)

    def _drop_row(self, j: dict[str, Any], mean: float, ref: float, n: int) -> dict[str, Any]:
        return {"kind": "live_throughput_drop", "severity": "warning", "run": j["run"],
                "subject": j["metric"], "value": mean, "threshold": ref, "message":
                f"{j['metric']} fell to {mean / ref:.0%} of the run's steady state: "
                f"{mean:,.4g} over the last {n} figures printed, against {ref:,.4g} before"}

    def _below_baseline(self, job: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The job figures 20% or more below the baseline's."""
        out = []
        for j in job:
            base = self.baseline.get(j["metric"])
            if base and j["value"] is not None and j["value"] < (1 - self.drop_share) * base:
                out.append({"kind": "live_below_baseline", "severity": "warning",
                            "run": j["run"], "subject": j["metric"], "value": j["value"],
                            "threshold": base, "message":
                            f"{j['metric']} = {j['value']:,.4g}: {j['value'] / base:.0%} of "
                            f"the baseline's {base:,.4g}"})
        return out


def _table_rows(ds: Dataset) -> tuple[int, dict[str, Any]]:
    """The rows of the training-log tables (:data:`GROWING_TABLES`), and of each other
    table; ``"(runs)"``: the runs table's values (a run's facts: world size, launcher, job
    id, ... a few values per run), so that a fact learnt makes the findings due."""
    growing = 0
    others: dict[str, Any] = {"(runs)": tuple(
        tuple(str(v) for v in row) for row in ds.runs.itertuples(index=False))}
    for name in ds.tables:
        if name in GROWING_TABLES:
            growing += len(ds[name])
        else:
            others[name] = len(ds[name])
    return growing, others


def _who(source: str, prefix: str) -> str:
    """'rank 12 (slurm-1.out)' for a launcher prefix or a per-rank file, else the file."""
    from ..names import rank_of_path

    if prefix:
        return f"rank {prefix} ({source})" if prefix.isdigit() else f"{prefix} ({source})"
    rank = rank_of_path(source)
    return f"rank {rank[0]} ({source})" if rank is not None else source


def _dur(s: float) -> str:
    if s >= 90:
        return f"{s / 60:.0f} min"
    return f"{s:.0f} s"


def _job_rows(a: Any) -> list[dict[str, Any]]:
    job = a["throughput.job"]
    if job is None or job.empty:
        return []
    out = []
    for r in job.itertuples():
        out.append({"run": _num(r.run), "metric": str(r.metric), "value": _num(r.value),
                    "how": _num(r.how), "source": _num(r.source), "pattern": _num(r.pattern),
                    "name": _num(r.name), "scope": _num(r.scope)})
    return out


def _series(df: pd.DataFrame, j: dict[str, Any]) -> pd.DataFrame:
    """The train rows of ``df`` of the job figure ``j``'s series (its run, metric, pattern,
    name, and its source: a file, or the run's folder)."""
    return df[_series_mask(df, j)]


def _series_mask(df: pd.DataFrame, j: dict[str, Any]) -> np.ndarray:
    """Which rows of ``df`` :func:`_series` keeps."""
    keep = _where(df["metric"], lambda v: v == j["metric"])
    keep &= _where(df["run"], lambda v: v == str(j["run"]))
    for col in ("pattern", "name"):
        if j.get(col) is not None and col in df:
            want = str(j[col])
            keep &= _where(df[col], want.__eq__)
    if j.get("source") is not None and "source" in df:
        folder = str(j["source"]).rstrip("/") + "/"
        keep &= _where(df["source"], lambda v: v == str(j["source"]) or v.startswith(folder))
    if "phase" in df:
        keep &= _where(df["phase"], lambda v: v == "train")
    return keep


def _series_files(df: pd.DataFrame, j: dict[str, Any],
                  ) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """The rows of :func:`_series` as (file names, each row's file as an index into them,
    each row's value): no copy of the table's other columns, and no string per row (the
    source column's codes), or None when the series has no rows."""
    keep = _series_mask(df, j)
    if not keep.any():
        return None
    src = df["source"]
    if isinstance(src.dtype, pd.CategoricalDtype):
        names = [str(v) for v in src.cat.categories] + ["nan"]
        codes = src.cat.codes.to_numpy()[keep].astype(np.int64)
        codes[codes < 0] = len(names) - 1
    else:
        uniques, inverse = np.unique(src.astype(str).to_numpy()[keep], return_inverse=True)
        names, codes = [str(v) for v in uniques], inverse.astype(np.int64)
    value = pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=float,
                                                                 na_value=np.nan)[keep]
    return names, codes, value


def _position_in_group(codes: np.ndarray) -> np.ndarray:
    """Each row's position among the rows of its code, in order (pandas' cumcount)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    sizes = np.diff(np.r_[starts, len(codes)])
    out = np.empty(len(codes), dtype=np.int64)
    out[order] = np.arange(len(codes)) - np.repeat(starts, sizes)
    return out


def _where(s: pd.Series, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each row's value as text, asked once per distinct value (the columns are
    categorical: a row's code picks its answer)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        answers = np.array([test(str(v)) for v in s.cat.categories] + [False], dtype=bool)
        return answers[s.cat.codes.to_numpy()]   # code -1 (missing): the last, False
    values = s.astype("object").to_numpy()
    distinct = {v: test(str(v)) for v in pd.unique(values) if v is not None and v == v}
    return np.array([distinct.get(v, False) for v in values], dtype=bool)


def _instance_rows(a: Any, job: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inst = a["throughput.instances"]
    if inst is None or inst.empty:
        return []
    out = []
    for j in job:
        rows = _series(inst, j)
        for r in rows.itertuples():
            out.append({"run": j["run"], "metric": j["metric"], "source": _num(r.source),
                        "instance": _num(r.instance), "value": _num(r.value),
                        "rows": _num(r.rows), "straggler": bool(r.straggler)})
    return out


def _baseline_figures(ds: Dataset, warmup: float) -> dict[str, float]:
    """The baseline's job figure per metric (its first run's)."""
    from ..analyses import Analyses

    job = Analyses(ds, {"warmup": warmup})["throughput.job"]
    out: dict[str, float] = {}
    if job is None or job.empty:
        return out
    for r in job.itertuples():
        if str(r.metric) not in out and _num(r.value) is not None:
            out[str(r.metric)] = float(r.value)
    return out


def load_baseline(path: str) -> Dataset:
    """``--baseline RUN``: a saved Dataset directory (``dptrace export``/``Dataset.save``), or
    any inputs ``dptrace.load`` reads."""
    import os

    from .. import api

    if os.path.isdir(path) and os.path.exists(os.path.join(path, "dptrace.json")):
        return api.open(path)
    return api.load(path)
