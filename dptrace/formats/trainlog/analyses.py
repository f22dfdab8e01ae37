"""The derived tables of training logs: per-instance throughput, the job figures, warm-up,
drift, end-of-run summaries (MLPerf logs' figures join the job figures here: their rows are
a training log's)."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import job as jobfig
from . import throughput as thr


def _rows(a: Analyses) -> pd.DataFrame | None:
    """The throughput rows without repeats, a phase on each (:func:`.throughput.phased`)."""
    return thr.phased(a.table("throughput")) if a.has("throughput") else None


def _tp(a: Analyses) -> pd.DataFrame | None:
    return a["throughput.rows"]


def _warm(a: Analyses) -> pd.DataFrame | None:
    """The warm-up rows of each instance (:func:`.throughput.mark_warmup`), as a column."""
    tp = _tp(a)
    return None if tp is None else thr.mark_warmup(tp, a.warmup).to_frame("warmup")


def _warm_mask(a: Analyses) -> pd.Series | None:
    warm = a["throughput.warm"]
    return None if warm is None else warm["warmup"]


def _instances(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else thr.per_instance(tp, a.warmup, warm=_warm_mask(a))


def _summary(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    if tp is None:
        return None
    return thr.throughput_summary(tp, a.warmup, inst=a["throughput.instances"])


def _series(a: Analyses) -> pd.DataFrame | None:
    """The summary with each series' own job figure (:func:`.job.series_figures`)."""
    summary = a["throughput.summary"]
    if summary is None:
        return None
    return jobfig.series_figures(summary, a.table("throughput"), a.ds.runs, a.warmup,
                                 inst=a["throughput.instances"], figures=_figures(a))


def _figures(a: Analyses) -> dict:
    """The figures the job figures and the per-series table share (:func:`.job._figure_of`)."""
    return a.memo.setdefault("throughput.figures", {})


def _ranks(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else tp[["source", "instance", "rank"]]


def _warmup(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else thr.warmup_length(tp, thr.WARMUP_REACH, a.warmup,
                                                     warm=_warm_mask(a))


def _drift(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else thr.drift(tp, a.warmup, warm=_warm_mask(a))


def _end_summaries(a: Analyses) -> pd.DataFrame | None:
    if not (a.has("throughput") or a.has("train_metrics")):
        return None
    return jobfig.end_summaries(a.table("throughput"), a.table("train_metrics"))


def _job(a: Analyses) -> pd.DataFrame:
    """The job figures (empty, with the columns, when the Dataset has no training rows)."""
    mllog = a.table("mllog") if "mllog" in a.ds.tables else None
    metrics = a.table("train_metrics")
    has = a.has("throughput")
    return jobfig.job_figures(a.table("throughput"), a.ds.runs, a.warmup,
                              jobfig.printed_ranges(metrics), metrics, mllog,
                              inst=a["throughput.instances"] if has else None,
                              summary=a["throughput.summary"] if has else None,
                              figures=_figures(a) if has else None)


def _judged(a: Analyses) -> pd.DataFrame | None:
    """The job figures the rules judge: those of runs with throughput lines or an MLPerf
    log (a log of step times only has its figure in the section, and no finding)."""
    if not a.has("throughput") and "mllog" not in a.ds.tables:
        return None
    return a["throughput.job"]


register_derived(
    Derived("throughput.job_judged", _judged, "the job figures the findings judge"),
    Derived("throughput.warm", _warm, "the warm-up rows of each instance"),
    Derived("throughput.ranks", _ranks, "the rank of each instance"),
    # run-local: each run's rows come from its own rows alone (the throughput functions
    # group by run first), so a run's context slices the report's table
    *(Derived(name, fn, doc, per_run=True) for name, fn, doc in (
        ("throughput.rows", _rows, "the throughput rows without repeats, phased"),
        ("throughput.summary", _summary, "per series: aggregates over its instances"),
        ("throughput.series", _series, "the summary with each series' job figure"),
        ("throughput.instances", _instances, "per series and instance: steady rate, steps"),
        ("throughput.warmup", _warmup, "how long each series takes to warm up"),
        ("throughput.drift", _drift, "first against last third of the steady figures"),
        ("throughput.end_summaries", _end_summaries, "logs without their trainer's summary"),
        ("throughput.job", _job, "the job figure per run, input and metric"),
    )),
)
