"""The Horovod tables ``dptrace compare`` and ``scaling`` match across runs: the timeline's
time split, activities, negotiation stragglers, fusion and the top tensors."""

from __future__ import annotations

from ...analysis.compare import US, Comm, Measure, Metric, Wide, register_measures

register_measures(
    Measure("horovod.time", (), (
        Metric("span_us", "max", "s", to_unit=US),
        Metric("negotiate_wall_us", "sum", "s", US, to_unit=US),
        Metric("op_wall_us", "sum", "s", US, to_unit=US),
        Metric("negotiate_share", "mean", "share"),
        Metric("op_share", "mean", "share"), Metric("idle_share", "mean", "share")),
        lambda k: "Horovod timeline", order=60, family="horovod", family_rank=1,
        comm=Comm("op_wall_us", "span_us", "op_share",
                  "Horovod collective time (the ops' wall time)", "collective",
                  "horovod timeline"),
        wide=tuple(Wide("horovod", column, what, order=60) for column, what in (
            ("negotiate_share", "negotiation share of the timeline"),
            ("op_share", "allreduce share of the timeline"),
            ("idle_share", "idle share of the timeline")))),
    Measure("horovod.activities", ("level", "op", "activity"), (
        Metric("wall_us", "sum", "s", US, to_unit=US), Metric("intervals", "sum", "intervals")),
        lambda k: f"{k['op']} (whole op)" if k["level"] == "op"
        else f"{k['op']} {k['activity']}", order=70, family="horovod", family_rank=0,
        # an op's whole interval holds its activities: the activities are the detail
        whole=lambda key: key.endswith(" (whole op)"), growth="wall_us"),
    Measure("horovod.stragglers", ("rank",), (
        Metric("last_share", "mean", "share"), Metric("mean_lag_us", "mean", "us")),
        lambda k: f"rank {k['rank']} negotiations", order=80),
    Measure("horovod.fusion", ("op",), (
        Metric("tensors_per_op", "mean", "tensors"), Metric("mean_bytes", "mean", "B")),
        lambda k: f"{k['op']} fusion", order=90),
    Measure("horovod.top_tensors", ("tensor",), (
        Metric("total_us", "sum", "s", US, to_unit=US), Metric("bytes", "max", "B")),
        lambda k: f"tensor {k['tensor']}", order=100),
)
