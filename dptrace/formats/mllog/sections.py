"""The MLPerf section: per log, time to train and its status, epochs, the last evaluation,
and the throughput by the rule of :mod:`dptrace.formats.mllog.compute`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as ml


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    ev = ds["mllog"]
    if ev.empty:
        return None
    return Section(
        SPEC.name, SPEC.title,
        "MLPerf :::MLLOG lines: time to train is run_start to run_stop (MLPerf's measure). "
        "Throughput (samples/s): the mean of the 'throughput' values the log prints (their "
        "scope, one GPU or the whole job, is the submitter's), else of tracked_stats, else "
        "train_samples x complete epochs / their time where no evaluation falls inside an "
        "epoch; 'from' says which. Nodes: the N of submission_platform ('8x...').",
        {"runs": ml.summary(ev), "epochs": ml.epochs(ev)},
    )


def facts(section: Section) -> dict[str, str]:
    runs = section.tables["runs"]
    ttt = runs["time_to_train_s"].dropna()
    best = f", time to train {ttt.min() / 60:.1f}-{ttt.max() / 60:.1f} min" \
        if len(ttt) > 1 else f", time to train {ttt.iloc[0] / 60:.1f} min" if len(ttt) else ""
    names = ", ".join(sorted({str(b) for b in runs["benchmark"] if pd.notna(b)}))
    return {"MLPerf": f"{len(runs)} log(s){': ' + names if names else ''}{best}"}


SPEC = register_section(SectionSpec(
    "mllog", "MLPerf logs", order=58, build=build,
    figures="dptrace.formats.mllog.figures:mllog_figures",
    terminal="dptrace.formats.mllog.terminal:draw_mllog", facts=facts))
