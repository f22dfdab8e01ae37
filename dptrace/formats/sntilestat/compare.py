"""The SambaNova tile table ``dptrace compare`` and ``scaling`` match across runs."""

from __future__ import annotations

from ...analysis.compare import Measure, Metric, Wide, register_measures

register_measures(
    Measure("tiles.overview", (), (
        Metric("exec_mean_pct", "mean", "%"), Metric("load_overhead_pct", "mean", "%"),
        Metric("idle_tiles", "sum", "tiles")), lambda k: "tiles", order=110,
        wide=(Wide("tiles", "exec_mean_pct", "tiles executing, mean %", order=110),
              Wide("tiles", "load_overhead_pct", "load and checkpoint, mean %", order=110))),
)
