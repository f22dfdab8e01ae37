"""The DeepSpeed comms section: per summary and op, calls, latency and its share, and the
peak bus bandwidth and where it is reached."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as dc


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    rows = ds["ds_comms"]
    if rows.empty:
        return None
    return Section(
        SPEC.name, SPEC.title,
        "DeepSpeed's comms logger (deepspeed.comm.log_summary()) times every collective; per "
        "op: its calls, their summed latency and its share of the summary's total, and the "
        "highest bus bandwidth printed (Gbit/s, DeepSpeed's unit) and at which message size. "
        "Sizes are as DeepSpeed prints them, in powers of 1024 rounded to 2 decimals.",
        {"ops": dc.by_op(rows), "sizes": dc.curve(rows)},
    )


def facts(section: Section) -> dict[str, str]:
    ops = section.tables["ops"]
    top = ops.sort_values("total_latency_s", ascending=False, kind="stable").head(1)
    most = "" if top.empty or pd.isna(top["total_latency_s"].iloc[0]) else \
        f", most time in {top['op'].iloc[0]}"
    return {"DeepSpeed comms": f"{ops['op'].nunique()} op(s){most}"}


SPEC = register_section(SectionSpec(
    "ds_comms", "DeepSpeed comms", order=56, build=build,
    figures="dptrace.formats.dscomms.figures:ds_comms_figures",
    terminal="dptrace.formats.dscomms.terminal:draw_ds_comms", facts=facts))
