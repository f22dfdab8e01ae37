"""The derived tables of training logs: per-instance throughput, the job figures, warm-up,
drift, end-of-run summaries (MLPerf logs' figures join the job figures here: their rows are
a training log's)."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from ...analysis import job as jobfig
from ...analysis import throughput as thr


def _tp(a: Analyses) -> pd.DataFrame | None:
    return a.table("throughput") if a.has("throughput") else None


def _instances(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else thr.per_instance(tp, a.warmup)


def _ranks(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else tp[["source", "instance", "rank"]]


def _warmup(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else thr.warmup_length(tp, thr.WARMUP_REACH, a.warmup)


def _drift(a: Analyses) -> pd.DataFrame | None:
    tp = _tp(a)
    return None if tp is None else thr.drift(tp, a.warmup)


def _end_summaries(a: Analyses) -> pd.DataFrame | None:
    if not (a.has("throughput") or a.has("train_metrics")):
        return None
    return jobfig.end_summaries(a.table("throughput"), a.table("train_metrics"))


def _job(a: Analyses) -> pd.DataFrame | None:
    mllog = a.table("mllog") if "mllog" in a.ds.tables else None
    if not a.has("throughput") and mllog is None:
        return None
    metrics = a.table("train_metrics")
    return jobfig.job_figures(a.table("throughput"), a.ds.runs, a.warmup,
                              jobfig.printed_ranges(metrics), metrics, mllog)


register_derived(
    Derived("throughput.instances", _instances, "per series and instance: steady rate, steps"),
    Derived("throughput.ranks", _ranks, "the rank of each instance"),
    Derived("throughput.warmup", _warmup, "how long each series takes to warm up"),
    Derived("throughput.drift", _drift, "first against last third of the steady figures"),
    Derived("throughput.end_summaries", _end_summaries, "logs without their trainer's summary"),
    Derived("throughput.job", _job, "the job figure per run, input and metric"),
)
