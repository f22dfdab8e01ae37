"""The Horovod timeline section: where the time goes, straggler ranks, fusion, top tensors.

:func:`build` makes the section's tables from the ``hvd_*`` tables (the JSON output is
those tables); :mod:`.terminal` draws them, one panel per file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...analysis import horovod as hv
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section

#: idle gaps kept per timeline file (the longest)
MAX_GAPS = 5

CAPTION = (
    "Per timeline file (rank 0 writes it; it covers all ranks). Wall time is the time at least "
    "one tensor was in a state; tensor time sums the copies each fused tensor carries, so it "
    "can exceed the span. A rank is 'last' when it was the final one to report a tensor ready: "
    "the others waited for it (only negotiations with ticks from 2+ ranks count; Horovod's "
    "response cache skips the ticks). Rates: bytes / op time (queueing and copies included) "
    "and bytes / time in the collective activity itself; none for bins with under 1 ms.")


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    """The report section for every Horovod timeline in ``ds``; None when there is none."""
    runs = ds["hvd_runs"]
    if runs.empty:
        return None
    acts, tensors = ds["hvd_activities"], ds["hvd_tensors"]
    groups = hv.fusion_groups(tensors)
    gaps = hv.idle_gaps(acts)
    return Section(SPEC.name, SPEC.title, CAPTION, {
        "runs": runs,
        "time": hv.time_summary(acts, runs, gaps),
        "activities": hv.activity_breakdown(acts, runs),
        "stragglers": hv.straggler_ranks(ds["hvd_ready"]),
        "fusion": hv.fusion_summary(groups, acts),
        "fusion_sizes": hv.fusion_sizes(groups),
        "small_allreduces": hv.small_allreduces(groups),
        "throughput": hv.op_throughput(groups, tensors, acts),
        "cycles": hv.cycle_stats(ds["hvd_cycles"]),
        "idle_gaps": hv.longest_gaps(gaps, MAX_GAPS),
        "top_tensors": hv.top_tensors(tensors, 10),
    }, figure_args={"cycles": ds["hvd_cycles"]})


SPEC = register_section(SectionSpec(
    "horovod", "Horovod timeline", order=50, build=build,
    figures="dptrace.formats.horovod.figures:horovod_figures",
    terminal="dptrace.formats.horovod.terminal:draw_horovod"))
