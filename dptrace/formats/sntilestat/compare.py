"""The SambaNova tile table ``dptrace compare`` and ``scaling`` match across runs."""

from __future__ import annotations

from ...analysis.compare import Measure, Metric, register_measures

register_measures(
    Measure("tiles.overview", (), (
        Metric("exec_mean_pct", "mean", "%"), Metric("load_overhead_pct", "mean", "%"),
        Metric("idle_tiles", "sum", "tiles")), lambda k: "tiles", order=110),
)
