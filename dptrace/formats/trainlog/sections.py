"""The Throughput section: per series, the value per instance after warm-up, and the job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...analysis import throughput as thr
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    tp = ds["throughput"]
    if tp.empty:
        return None
    fraction = opts.get("warmup", thr.WARMUP_FRACTION)
    return Section(
        SPEC.name, SPEC.title,
        "Per series (one kind of throughput line in one log): the value per instance after "
        f"warm-up (first {fraction:.0%} of each instance's steps dropped), and the job figure. "
        "Per-instance and per-device rates are summed; lines that already cover the whole job "
        "(scope global) are never summed again. 'mean' is the SambaNova convention.",
        {
            "summary": thr.throughput_summary(tp, fraction),
            "instances": thr.per_instance(tp, fraction),
        },
        figure_args={"tp": tp, "fraction": fraction},
    )


def facts(section: Section) -> dict[str, str]:
    s = section.tables["summary"]
    return {"instances": f"throughput: {len(s)} series, up to {int(s['instances'].max())} "
                         "instances in one"}


SPEC = register_section(SectionSpec(
    "throughput", "Throughput", order=20, build=build,
    figures="dptrace.formats.trainlog.figures:throughput_figures",
    terminal="dptrace.formats.trainlog.terminal:draw_throughput", facts=facts))
