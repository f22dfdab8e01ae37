"""The toy table ``dptrace compare`` matches across runs: waiting per rank."""

from __future__ import annotations

from dptrace.analysis.compare import Measure, Metric, S, register_measures

register_measures(Measure("toy.ranks", ("rank",), (
    Metric("wait_s", "sum", "s", S), Metric("wait_share", "mean", "share")),
    lambda k: f"rank {k['rank']}", order=5000))
