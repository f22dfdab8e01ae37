"""mpiP's per-task MPI time gets mpitrace's rank findings (issue 29, finding 3.3).

Both tools fill ``mpi_ranks``; the rank rules read ``communication.ranks`` built from it, so
the compute straggler (a rank with far LESS MPI time: the others wait for it) and its other
side, the waiting rank (one rank with far MORE MPI time than all the others, which spend
little: it waits for them, having far less to compute), come from one function
(``mpitrace_findings._mpi_outliers``) for both tools.

tests/fixtures/mpip/idle_r5 is a real mpiP run made here (make_idle_fixture.sh): 6 ranks of
dp_steps.c, rank 5 with no compute. Numbers expected here are read from the report's own
``MPI Time (seconds)`` rows, not from dptrace's tables.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.findings import build
from dptrace.formats.mpitrace import findings as mpitrace_findings

HERE = Path(__file__).resolve().parent
MPIP = HERE / "fixtures" / "mpip"
REAL = HERE.parent.parent / "shared" / "realdata"


def _task_times(report: Path) -> dict[int, tuple[float, float, float]]:
    """task -> (AppTime, MPITime, MPI%) from the report's MPI Time section."""
    text = report.read_text()
    section = text.split("@--- MPI Time (seconds)")[1].split("@---")[0]
    return {int(m[1]): (float(m[2]), float(m[3]), float(m[4]))
            for m in re.finditer(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", section, re.M)}


def _found(path: Path) -> pd.DataFrame:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return build(dptrace.load(path))


def _of(found: pd.DataFrame, kind: str) -> pd.DataFrame:
    return found[found["kind"].astype(str) == kind]


def test_the_idle_rank_of_a_real_mpip_run_is_named_as_waiting():
    """Rank 5 computed nothing: 98.41% of its time in MPI, the others 13.0-14.0%. It is the
    one that waited (for all the others); no rank is a compute straggler."""
    report = next((MPIP / "idle_r5").glob("*.mpiP"))
    t = _task_times(report)
    assert max(t, key=lambda r: t[r][1]) == 5 and t[5][2] > 98
    others = sorted(v[1] for r, v in t.items() if r != 5)
    assert max(v[2] for r, v in t.items() if r != 5) < 15
    found = _found(MPIP / "idle_r5")
    assert _of(found, "compute_straggler").empty
    w = _of(found, "waiting_rank")
    assert len(w) == 1 and int(w["rank"].iloc[0]) == 5 and w["severity"].iloc[0] == "warning"
    med = others[len(others) // 2]
    gap = t[5][1] - med
    msg = w["message"].iloc[0]
    assert msg.startswith(f"Rank 5 spent {gap:.2f} s more in MPI than the median of the other "
                          f"5 ranks of job {report.stem} ({t[5][1]:.2f} s vs {med:.3g} s")
    assert "most in MPI_Allreduce" in msg and "it waited for them" in msg
    assert w["evidence"].iloc[0] == f"communication.ranks job={report.stem} rank=5"


def _ranks(times: list[float], elapsed: float = 100.0, job: str = "j") -> pd.DataFrame:
    return pd.DataFrame({"job": job, "rank": range(len(times)), "nranks": len(times),
                         "comm_time_s": times, "elapsed_s": elapsed})


NO_PROFILES = pd.DataFrame(columns=["job", "rank", "routine", "time_s"])
NO_MESSAGES = pd.DataFrame(columns=["job", "rank", "routine", "bin", "time_s", "bin_lo_bytes",
                                    "bin_hi_bytes"])


def test_one_task_at_75_65_pct_mpi_waits_and_is_no_straggler():
    """Issue 29's report: one task at 75.65% MPI time, five at 0.4-1.6%. No rank has far
    less MPI time than the others (no compute straggler); task 3 waits for them."""
    rt = _ranks([0.4, 1.6, 0.9, 75.65, 1.2, 0.7])
    assert not mpitrace_findings.compute_stragglers(rt, NO_PROFILES, NO_MESSAGES)
    found = mpitrace_findings.waiting_ranks(rt, NO_PROFILES, NO_MESSAGES)
    assert [(f.kind, f.rank) for f in found] == [("waiting_rank", 3)]
    assert found[0].message.startswith(
        "Rank 3 spent 74.75 s more in MPI than the median of the other 5 ranks of job j "
        "(75.65 s vs 0.9 s: 75.7% of the 100 s run against 0.9%")


@pytest.mark.parametrize("times,fires", [
    ([1.0, 1.2, 0.9, 1.1, 2.5], False),      # 1.45 s above the others' median: < 2% of 100 s
    ([1.0, 1.2, 0.9, 1.1, 3.5], True),       # 2.45 s above, 2.3 s above the next rank
    ([30.0, 32.0, 31.0, 33.0, 55.0], False),  # the others' median 31.5 s > half of 55 s
    ([1.0, 1.2, 40.0, 1.1, 41.0], False),     # two ranks high: not one rank alone
])
def test_waiting_rank_thresholds(times, fires):
    found = mpitrace_findings.waiting_ranks(_ranks(times), NO_PROFILES, NO_MESSAGES)
    assert [f.rank for f in found] == ([4] if fires else [])


@pytest.mark.parametrize("path", [
    REAL / "mpitrace", REAL / "mpip", MPIP / "default", MPIP / "concise", MPIP / "mpitrace",
    HERE / "fixtures" / "straggler", HERE / "fixtures" / "mpitrace"])
def test_no_waiting_rank_where_the_top_rank_only_tops_a_spread(path):
    """The real jobs (ThetaGPU gpu8 rank 7: 8.35 s vs a median of 5.46 s; the delayed
    straggler runs, whose other ranks all wait) and the balanced runs give none."""
    assert _of(_found(path), "waiting_rank").empty


def test_mpip_task_rows_give_the_compute_straggler_too():
    """The old user guide's 4-task report: task 0 at 0.000243 s of MPI, the others 10 s: the
    others waited for task 0 (in MPI_Barrier), as mpitrace's rule says of such times."""
    found = _found(REAL / "mpip" / "llnl_mpiP_UserGuide_old_from_docs.txt")
    c = _of(found, "compute_straggler")
    assert list(c["rank"].astype(int)) == [0]
    assert _of(found, "waiting_rank").empty
