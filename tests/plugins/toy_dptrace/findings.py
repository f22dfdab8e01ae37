"""The toy format's rule: a rank that waits more than half its time."""

from __future__ import annotations

import pandas as pd

from dptrace.findings import Finding, ev
from dptrace.findings.rules import Rule, register_rules
from dptrace.findings.thresholds import Threshold, register_thresholds

WAIT_SHARE = 0.5


def toy_waiting(waits: pd.DataFrame, share: float = WAIT_SHARE) -> list[Finding]:
    out = []
    for r in waits.itertuples(index=False):
        if r.wait_share > share:
            out.append(Finding(
                "warning", "toy_waiting", "rank", f"rank {r.rank}",
                f"Rank {r.rank} waited {100 * r.wait_share:.0f}% of its time "
                f"({r.wait_s:g} s of {r.busy_s + r.wait_s:g} s).",
                ev("toy.waits", source=r.source, rank=r.rank), rank=int(r.rank),
                value=100.0 * r.wait_share, threshold=100.0 * share))
    return out


register_thresholds(Threshold("toy_waiting", "share", 100.0 * WAIT_SHARE, "%",
                              "a rank waiting more than this share of its time", scale=0.01))
register_rules(Rule(("toy_waiting",), ("toy.waits",), toy_waiting, order=5000))
