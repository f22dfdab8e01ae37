"""The Throughput section: per series, the value per instance after warm-up, and the job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import analyses
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import job
from . import throughput as thr


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    a = analyses.of(ds, opts)
    tp = ds["throughput"]
    fraction = a.warmup
    figures = a["throughput.job"]
    if figures is None or tp.empty and figures.empty:   # (an MLPerf log's own figure is a
        # job figure too)
        return None
    summary = a["throughput.series"]
    if summary is None:
        summary = job.series_figures(thr.throughput_summary(tp, fraction), tp, ds.runs,
                                     fraction)
    instances = a["throughput.instances"]
    return Section(
        SPEC.name, SPEC.title,
        "The job figure first: per run and metric, the job's training throughput and the rule "
        "that made it (a figure printed for the whole job before a sum over ranks; "
        "iterations per second are a rank's rate, as ranks step together; one rank's "
        "per-device rate times the world size is an estimate). Then per series (one kind of "
        f"throughput line in one log): the value per instance after warm-up (first "
        f"{fraction:.0%} of each instance's steps dropped). Repeated lines (a progress bar's "
        "closing redraw, a line printed twice) are not counted; bars of evaluation, loading "
        "and downloads are never the job figure.",
        {
            "job": figures,
            "summary": summary,
            "instances": thr.per_instance(tp, fraction) if instances is None else instances,
        },
        figure_args={"tp": tp, "fraction": fraction},
    )


def facts(section: Section) -> dict[str, str]:
    s = section.tables["summary"]
    if s.empty:   # only a job figure (an MLPerf log's own, a step time)
        return {"instances": f"throughput: {len(section.tables['job'])} job figure(s)"}
    return {"instances": f"throughput: {len(s)} series, up to {int(s['instances'].max())} "
                         "instances in one"}


SPEC = register_section(SectionSpec(
    "throughput", "Throughput", order=20, build=build,
    figures="dptrace.formats.trainlog.figures:throughput_figures",
    terminal="dptrace.formats.trainlog.terminal:draw_throughput", facts=facts))
