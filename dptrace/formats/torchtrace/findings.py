"""The findings rules of PyTorch profiler traces: pure functions from the derived tables of
:mod:`.analyses` to :class:`~dptrace.findings.Finding` rows, registered with their thresholds
(:mod:`dptrace.findings.thresholds` holds the mechanism)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...findings import Finding, ev
from ...findings import text as tx
from ...findings.rules import Rule, register_rules

# -- thresholds --------------------------------------------------------------------------------

# -- collective straggler (PyTorch profiler traces) -----------------------------------------
#
# In synchronous data parallelism the other ranks wait for a slow rank inside the collective
# (an all-reduce of gradients cannot finish before every rank has joined), so the slow rank's
# collectives are the shortest. A rank is a collective straggler when its communication time
# (union of its collective kernels, or of gloo:* work on a CPU trace) is below the median of
# the other ranks' by at least COLLECTIVE_GAP_SHARE of its run's profiled span, and at most
# COLLECTIVE_RATIO of that median. Measured (tests/fixtures/torchtrace, 2 ranks, 3 steps,
# gloo on a shared 2-core VM): rank 1 sleeping 50 ms per step: 4.6 ms vs 158.3 ms, a gap of
# 84% of the 183 ms span, ratio 0.03; balanced: 27.5 ms vs 28.2 ms (1.3% of the span, ratio
# 0.98).
#: collective straggler: the gap must be at least this share of the run's profiled span
COLLECTIVE_GAP_SHARE: float = 0.10

#: collective straggler: ... and the rank's communication at most this fraction of the others'
COLLECTIVE_RATIO: float = 0.5



def collective_stragglers(ranks: pd.DataFrame, share: float = COLLECTIVE_GAP_SHARE,
                          ratio: float = COLLECTIVE_RATIO) -> list[Finding]:
    """Per job of ``torchtrace.ranks`` (``analysis.torchtrace.rank_comm``: the traces of a run
    with one world size and backend, profiled at overlapping times, one per rank): a rank
    whose communication time is below the median of the other ranks' by at least ``share``
    of the job's span (the longest rank's) and at most ``ratio`` times that median: the
    others waited for it inside the collectives. Traces that cannot be one job's (several
    jobs' ranks in one directory) are not compared."""
    out: list[Finding] = []
    ranks = ranks[ranks["job"].notna() & ranks["communication_us"].notna()]
    if ranks.empty:
        return out
    by = ["run", "job"] if "run" in ranks.columns else ["job"]
    for key, g in ranks.groupby(by, sort=False, observed=True):
        run = str(key[0]) if "run" in ranks.columns else ""
        if len(g) < 2:
            continue
        span = float(g["span_us"].max())
        comm_us = g["communication_us"].to_numpy(dtype="float64")
        for p, r in enumerate(g.itertuples(index=False)):
            med = float(np.median(np.delete(comm_us, p)))
            mine = float(comm_us[p])
            gap = med - mine
            if not span > 0 or gap < share * span or mine > ratio * med:
                continue
            where = "collective kernels" if r.basis == "gpu" else "gloo:* collectives"
            of = f" of run {run}" if run else ""
            out.append(Finding(
                "warning", "collective_straggler", "rank", f"rank {r.rank}",
                f"Rank {r.rank} spent {tx.time_us(gap)} less in collectives than the median of "
                f"the other {len(g) - 1} profiled rank(s){of} ({tx.time_us(mine)} vs "
                f"{tx.time_us(med)} in {int(r.collectives):,} {where}; the gap is "
                f"{100 * gap / span:.1f}% of the {tx.time_us(span)} profiled): the others "
                "waited for it inside the collectives.",
                ev("torchtrace.ranks", run=run, rank=r.rank),
                f"Look at what rank {r.rank} does before each collective (data loading, "
                "uneven work, a slower node or GPU); compare its ProfilerStep#N CPU time with "
                "the others'.",
                rank=int(r.rank), value=100 * gap / span, threshold=100 * share,
                run=run or None, world_size=int(r.world_size) if not tx.na(r.world_size)
                else len(g), origin=f"run {run}"))
    return out


register_rules(
    Rule(("collective_straggler",), ("torchtrace.ranks",), collective_stragglers, 220),
)
