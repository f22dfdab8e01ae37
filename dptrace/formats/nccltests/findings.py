"""The findings rules of nccl-tests results against the job: pure functions from the derived tables
of :mod:`.analyses` to :class:`~dptrace.findings.Finding` rows, registered with their thresholds
(:mod:`dptrace.findings.thresholds` holds the mechanism)."""

from __future__ import annotations

import pandas as pd

from ...findings import Finding, ev
from ...findings import text as tx
from ...findings import thresholds as th
from ...findings.rules import Rule, register_rules
from ...findings.thresholds import Threshold, register_thresholds

# -- thresholds --------------------------------------------------------------------------------

# below_system_busbw: a run with nccl-tests output beside the job's evidence (an mpitrace
# profile, PyTorch profiler traces) holds what this system's collectives reach when nothing
# else runs; a large bin of the job's collectives (all messages > th.LARGE_BYTES) with at least
# SYSTEM_MIN_SHARE of the job's collective time (a few start-up broadcasts are no finding)
# below SYSTEM_BUSBW_FRACTION of the test's busbw at that size is a finding. Real pairs:
# HTA's A100 NCCL 2-rank trace beside superbench's 8-GPU A100 all_reduce_perf (the test's
# system is like the trace's, not the same machine): 8-32 MB allreduce kernels at 2.1-8.7
# GB/s, 2-6% of the test's 90-150 GB/s (each kernel's time holds its wait for the other
# rank). Half the system's figure leaves room for the job's sizes being busier than the
# test's (other traffic, a second communicator) and still flags a job an order off.
#: below_system_busbw: a large bin below this fraction of the system's nccl-tests busbw
SYSTEM_BUSBW_FRACTION: float = 0.5

#: below_system_busbw: a bin counts when it holds at least this share of the job's
#: collective time (in one kind of evidence)
SYSTEM_MIN_SHARE: float = 0.05


register_thresholds(
    Threshold("below_system_busbw", "fraction", 100.0 * SYSTEM_BUSBW_FRACTION, "%",
              f"a bin of the job's collectives of more than {th.LARGE_BYTES:,} bytes reaching "
              "less than this share of the busbw this system's nccl-tests measured at that "
              "size", scale=0.01),
)



def below_system_busbw(jvs: pd.DataFrame, fraction: float = SYSTEM_BUSBW_FRACTION,
                       large_bytes: int = th.LARGE_BYTES,
                       min_share: float = SYSTEM_MIN_SHARE) -> list[Finding]:
    """Per run and kind of evidence (``nccltests.job_vs_system``): large bins of the job's
    collectives holding at least ``min_share`` of its collective time whose busbw is below
    ``fraction`` of what this system's nccl-tests measured at that size. One finding per
    run and evidence, naming the bin with the most time among them."""
    out: list[Finding] = []
    if jvs.empty:
        return out
    for evidence, g in jvs.groupby("evidence", sort=False):
        ratio = g["ratio"].astype("float64")
        slow = g[(g["bin_lo_bytes"].astype("float64") > large_bytes)
                 & (g["time_share"].astype("float64") >= min_share) & (ratio < fraction)]
        if slow.empty:
            continue
        worst = slow.loc[slow["time_s"].astype("float64").idxmax()]
        r = float(worst["ratio"])
        others = "" if len(slow) == 1 else \
            f"; {tx.plural(len(slow) - 1, 'more large bin')} below {tx.pct(fraction)} too"
        tested = "ranks unknown" if tx.na(worst["test_nranks"]) or tx.na(worst["test_nhosts"]) \
            else f"{tx.integer(worst['test_nranks'])} ranks on " \
            f"{tx.plural(int(worst['test_nhosts']), 'host')}"
        beyond = (" (the job's size is above the largest the test ran: its busbw there)"
                  if bool(worst["beyond_tested"]) else "")
        run = {"run": worst["run"]} if "run" in g.columns else {}
        out.append(Finding(
            "warning", "below_system_busbw", "job", str(evidence),
            f"The job's {worst['collective']}{tx.bin_bytes(worst)} ({tx.integer(worst['calls'])} "
            f"calls, {100 * float(worst['time_share']):.0f}% of its collective time in the "
            f"{evidence}) reached a bus bandwidth of {float(worst['busbw_gbps']):.3g} GB/s, "
            f"{100 * r:.1f}% of the {float(worst['system_busbw_gbps']):.3g} GB/s this "
            f"system's nccl-tests {worst['test']}_perf measured at that size{beyond} "
            f"({tested}; the job ran {tx.integer(worst['nranks'])} ranks){others}.",
            ev("nccl_tests.job_vs_system", **run, collective=worst["collective"],
               bin=int(worst["bin"])),
            "nccl-tests time a collective with every rank ready at once; a job's collective "
            "time also holds its wait for the last rank to arrive, so look first for a "
            "straggler (the per-rank findings) and for compute that the collectives wait "
            "on; then for what differs from the test: the network NCCL chose (the NCCL "
            "setup section), a communicator over more nodes than the test's, or other "
            "traffic at the same time.",
            value=100.0 * r, threshold=100.0 * fraction))
    return out


register_rules(
    Rule(("below_system_busbw",), ("nccltests.job_vs_system",), below_system_busbw, 130),
)
