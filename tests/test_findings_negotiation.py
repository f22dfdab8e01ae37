"""Horovod negotiation stragglers judged on the steady state only (issue 29, finding 3.2).

Horovod's response cache (on by default since 0.16) negotiates a tensor without rank-ready
ticks once its response is cached, i.e. after the first step: with the cache on, the only
ticks are those of the start-up broadcasts and the first step, where one rank (the root of
the broadcasts, the one that builds its graph last) is "last" in every run, balanced or not.
A rank is named only from the steady state (a tensor's second negotiation or later); a
timeline with start-up ticks only gets an info finding; one run never names two ranks.

Every headline is checked against the timeline's own events, read here with the json module
(one negotiation = a B NEGOTIATE_* record of a pid and the X rank ticks before its E).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.findings import build
from dptrace.formats.horovod import compute as hv
from dptrace.formats.horovod import findings as horovod_findings

HERE = Path(__file__).resolve().parent
HVD = HERE / "fixtures" / "horovod"
HMPI = HERE / "fixtures" / "horovod_mpi"
REAL = HERE.parent.parent / "shared" / "realdata" / "horovod_timeline"


def _events(path: Path) -> list[dict]:
    """The timeline's events (the 2019 files are arrays never closed: the last ',' ends it)."""
    text = path.read_text(encoding="utf-8").strip().rstrip(",")
    if not text.endswith("]"):
        text += "]"
    return json.loads(text)


def _negotiations(path: Path) -> list[dict]:
    """Each negotiation with ticks from 2+ ranks: its pid, which negotiation of that pid it
    is (0, 1, ...), its op, and (rank, ts) of each tick, from the raw events."""
    out, open_, count = [], {}, {}
    for e in _events(path):
        pid, ph = e.get("pid"), e.get("ph")
        if ph == "B" and str(e.get("name", "")).startswith("NEGOTIATE_"):
            open_[pid] = {"pid": pid, "n": count.get(pid, 0), "op": e["name"][10:], "ticks": []}
            count[pid] = count.get(pid, 0) + 1
        elif ph == "X" and pid in open_:
            open_[pid]["ticks"].append((int(e["name"]), int(e["ts"])))
        elif ph == "E" and pid in open_:
            neg = open_.pop(pid)
            if len({r for r, _ in neg["ticks"]}) >= 2:
                out.append(neg)
    return out


def _last(neg: dict) -> tuple[int, int]:
    """(last rank, its lag behind the first tick)."""
    ts = [t for _, t in neg["ticks"]]
    r, t = max(neg["ticks"], key=lambda x: x[1])
    return r, t - min(ts)


def _findings(path: Path) -> pd.DataFrame:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return build(dptrace.load(path))


def _of(found: pd.DataFrame, kind: str) -> pd.DataFrame:
    return found[found["kind"].astype(str) == kind]


@pytest.mark.parametrize("name", ["andrewor14_horovod_timeline_2019_4rank.json",
                                  "andrewor14_horovod_timeline_2019_v2.json"])
def test_the_2019_timelines_keep_rank_0_from_their_steady_state(name):
    """No response cache here: every negotiation has ticks. Of the 673, the 13 broadcasts and
    each of the 6 gradients' first negotiation are start-up; in the 654 others rank 0 is last
    every time, 0.2 s or more after the first rank: the warning stays, with those numbers."""
    path = HVD / name
    negs = _negotiations(path)
    steady = [n for n in negs if n["n"] >= 1]
    startup = [n for n in negs if n["n"] == 0]
    assert (len(negs), len(steady)) == (673, 654)
    assert sum(n["op"] == "BROADCAST" for n in startup) == 13
    lasts = [_last(n) for n in steady]
    assert {r for r, _ in lasts} == {0} and min(lag for _, lag in lasts) > 200_000
    found = _findings(path)
    f = _of(found, "negotiation_straggler")
    assert len(f) == 1 and int(f["rank"].iloc[0]) == 0
    msg = f["message"].iloc[0]
    assert msg.startswith("Rank 0 was the last to report ready, 1.0 ms or more after the first "
                          "rank, in 654 of 654 steady-state negotiations (100.0%)")
    assert f["evidence"].iloc[0] == f"horovod.stragglers source={path} rank=0"
    assert _of(found, "unjudged_negotiations").empty


@pytest.mark.parametrize("run,ticked,broadcasts,last,of", [
    ("delayed_r2", 21, 14, 2, 15), ("normal", 21, 14, 1, 19), ("small", 28, 14, 1, 28)])
def test_start_up_ticks_only_give_an_info_and_no_warning(run, ticked, broadcasts, last, of):
    """Horovod 0.28.1 with its response cache on: only the start-up broadcasts and each
    tensor's first negotiation carry ticks (normal/ is a balanced run, yet rank 1 is last in
    19 of its 21); after them, no negotiation has a tick. An info finding says so, names the
    start-up's last rank as warm-up, and no rank is named a straggler."""
    path = HMPI / run / "timeline.json"
    negs = _negotiations(path)
    assert len(negs) == ticked and all(n["n"] == 0 for n in negs)
    assert sum(n["op"] == "BROADCAST" for n in negs) == broadcasts
    lasts = [_last(n)[0] for n in negs]
    assert lasts.count(last) == of and max(set(lasts), key=lasts.count) == last
    found = _findings(HMPI / run)
    assert _of(found, "negotiation_straggler").empty
    info = _of(found, "unjudged_negotiations")
    assert len(info) == 1 and info["severity"].iloc[0] == "info"
    msg = info["message"].iloc[0]
    assert msg.startswith("No steady-state negotiation of ")
    assert f"Its {ticked} compared negotiations are start-up: {broadcasts} broadcasts" in msg
    assert f"At start-up rank {last} was last in {of} of {ticked}" in msg
    n_all = sum(1 for e in _events(path) if e.get("ph") == "B"
                and str(e.get("name", "")).startswith("NEGOTIATE_"))
    assert f"The other {n_all - ticked:,} negotiations carry no ticks" in msg


def test_a_cut_out_of_one_step_names_nobody_and_never_two_ranks():
    """sagemaker-debugger's fixture: ticks of ranks 4, 5, 7 in 4 negotiations, each tensor
    once; ranks 5 and 7 were each last in 2 (both used to be named 'the last')."""
    path = HVD / "smdebug_horovod_timeline_small.json"
    found = _findings(path)
    assert _of(found, "negotiation_straggler").empty
    msg = _of(found, "unjudged_negotiations")["message"].iloc[0]
    assert "no tensor is negotiated twice in the file" in msg
    assert "no one rank was last most often (2 of 4 at most)" in msg


def test_the_synthetic_straggler_is_named_from_its_steady_state():
    """gen_horovod's job (rank 3 late): 216 negotiations with ticks, 66 first ones; rank 3 is
    last in all 150 others, 1 ms or more behind in 113 (the rest are ticks of one cycle)."""
    path = HVD / "synthetic_v0201_packed.json"
    steady = [n for n in _negotiations(path) if n["n"] >= 1]
    lasts = [_last(n) for n in steady]
    waited = sum(1 for r, lag in lasts if r == 3 and lag >= 1000)
    assert (len(steady), {r for r, _ in lasts}, waited) == (150, {3}, 113)
    f = _of(_findings(path), "negotiation_straggler")
    assert f["message"].iloc[0].startswith(
        "Rank 3 was the last to report ready, 1.0 ms or more after the first rank, in 113 of "
        "150 steady-state negotiations (75.3%)")


@pytest.mark.parametrize("name", ["alcfws_timeline_cpu_n1.json", "alcfws_timeline_gpu_n1.json",
                                  "cipherdoc_horovod_pytorch_bcast_only.json"])
def test_one_rank_timelines_say_nothing_of_stragglers(name):
    found = _findings(REAL / name)
    assert not {"negotiation_straggler", "unjudged_negotiations"} & set(found["kind"].astype(str))


# -- the rule on small frames ------------------------------------------------------------------

def _table(rows: list[tuple[str, str, int, int, int]], compared: dict[tuple[str, str], int]):
    """phase_stragglers rows: (source, phase, rank, last, waited)."""
    out = []
    for src, phase, rank, last, waited in rows:
        n = compared[(src, phase)]
        out.append({"source": src, "phase": phase, "rank": rank, "negotiations": n,
                    "compared": n, "broadcasts": 0, "last": last, "waited": waited,
                    "waited_share": waited / n, "mean_lag_us": 2000.0, "p95_lag_us": 3000.0,
                    "max_lag_us": 4000.0, "steady_from_us": 1e6})
    return pd.DataFrame(out)


@pytest.mark.parametrize("waited,fires", [((10, 10), []), ((11, 9), [0]), ((9, 11), [1]),
                                          ((9, 8), [])])
def test_one_rank_at_most_and_ties_name_nobody(waited, fires):
    """At 50% two ranks tie: nobody is named (they used to be both); just over, one."""
    t = _table([("t.json", hv.STEADY, 0, 20, waited[0]), ("t.json", hv.STEADY, 1, 20, waited[1])],
               {("t.json", hv.STEADY): 20})
    assert [f.rank for f in horovod_findings.negotiation_stragglers(t)] == fires


def test_two_timelines_of_one_run_naming_different_ranks_name_none():
    t = _table([("a.json", hv.STEADY, 0, 20, 20), ("a.json", hv.STEADY, 1, 20, 0),
                ("b.json", hv.STEADY, 0, 20, 0), ("b.json", hv.STEADY, 1, 20, 20)],
               {("a.json", hv.STEADY): 20, ("b.json", hv.STEADY): 20})
    found = horovod_findings.negotiation_stragglers(t)
    assert [(f.kind, f.severity) for f in found] == [("unjudged_negotiations", "info")]
    assert "rank 0 in a.json, rank 1 in b.json" in found[0].message


@pytest.mark.parametrize("steady_n,kind", [(9, "unjudged_negotiations"),
                                           (10, "negotiation_straggler")])
def test_ten_steady_negotiations_are_needed(steady_n, kind):
    t = _table([("t.json", hv.STARTUP, 0, 5, 5), ("t.json", hv.STARTUP, 1, 0, 0),
                ("t.json", hv.STEADY, 0, steady_n, steady_n), ("t.json", hv.STEADY, 1, 0, 0)],
               {("t.json", hv.STARTUP): 5, ("t.json", hv.STEADY): steady_n})
    assert [f.kind for f in horovod_findings.negotiation_stragglers(t)] == [kind]


def test_ticks_within_one_cycle_are_no_wait():
    """small/: rank 1 is last in all 28 start-up negotiations, mostly by microseconds (the
    coordinator reads rank 0's requests, then rank 1's): only lags of 1 ms or more count."""
    ds = dptrace.load(HMPI / "small" / "timeline.json")
    t = hv.phase_stragglers(ds["hvd_ready"], ds["hvd_activities"]).set_index("rank")
    lags = [_last(n)[1] for n in _negotiations(HMPI / "small" / "timeline.json")]
    assert int(t.loc[1, "last"]) == 28
    assert int(t.loc[1, "waited"]) == sum(lag >= 1000 for lag in lags) < 28
