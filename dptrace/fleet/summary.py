"""What a survey says first: the slowest runs against their own history, the hosts that
straggle again and again, the runs on a fallback network, and the runs that failed.

The rules:

- A run's **history** is the other runs of the same job kind: the same job-figure metric,
  world size and formats. A run is slow when its per-GPU figure is below
  :data:`SLOW_SHARE` of its history's median (a history of at least :data:`HISTORY` runs,
  itself included); the slowest first.
- A **repeat-offender host** is a host that a straggler finding names in at least
  :data:`REPEATS` runs (``fleet_ranks``: ``straggler`` grouped by ``host``).
- A run is on a **fallback network** when NCCL fell back to sockets on a process (its
  overview), or a finding of kind ``nccl_socket_fallback`` fired.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from .api import Fleet

#: a run is slow below this share of its history's median per-GPU figure
SLOW_SHARE = 0.9
#: runs a history needs (the run included) before a run is judged against it
HISTORY = 3
#: runs a host must straggle in to be a repeat offender
REPEATS = 2
#: rows shown per list in the terminal
SHOWN = 10


def slow_runs(fleet: pd.DataFrame) -> pd.DataFrame:
    """Runs below SLOW_SHARE of their history's median per-GPU figure, slowest first:
    run_key, run, path, metric, per_gpu, history_median, share, history_runs."""
    import pandas as pd

    cols = ["run_key", "run", "path", "metric", "per_gpu", "history_median", "share",
            "history_runs"]
    df = fleet[fleet["per_gpu"].notna()].copy()
    if not len(df):
        return pd.DataFrame(columns=cols)
    keys = [df["metric"].astype(object).fillna(""), df["world_size"].astype(object).fillna(-1),
            df["formats"].astype(object).fillna("")]
    grouped = df.groupby(keys, sort=False, dropna=False)["per_gpu"]
    df["history_median"] = grouped.transform("median")
    df["history_runs"] = grouped.transform("size")
    df["share"] = df["per_gpu"] / df["history_median"]
    out = df[(df["history_runs"] >= HISTORY) & (df["share"] < SLOW_SHARE)]
    return out.sort_values("share", kind="stable")[cols].reset_index(drop=True)


def repeat_hosts(ranks: pd.DataFrame) -> pd.DataFrame:
    """Hosts a straggler finding names in REPEATS runs or more, most first: host,
    straggler_runs, runs (runs with a rank on it), ranks (the straggling ranks)."""
    import pandas as pd

    cols = ["host", "straggler_runs", "runs", "ranks"]
    df = ranks[ranks["host"].notna()]
    if not len(df):
        return pd.DataFrame(columns=cols)
    strag = df[df["straggler"].astype(bool)]
    per = strag.groupby(strag["host"].astype(object))["run_key"].nunique()
    total = df.groupby(df["host"].astype(object))["run_key"].nunique()
    which = strag.groupby(strag["host"].astype(object))["rank"].agg(
        lambda s: ",".join(str(int(r)) for r in sorted(set(s.dropna()))))
    out = pd.DataFrame({"host": per.index, "straggler_runs": per.to_numpy(),
                        "runs": total.reindex(per.index).to_numpy(),
                        "ranks": which.reindex(per.index).to_numpy()})
    out = out[out["straggler_runs"] >= REPEATS]
    return out.sort_values(["straggler_runs", "host"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)


def fallback_runs(fleet: pd.DataFrame, findings: pd.DataFrame) -> pd.DataFrame:
    """Runs on a fallback network: run_key, run, path, nccl_network."""
    flagged = set(findings.loc[findings["kind"].astype(object) == "nccl_socket_fallback",
                               "run_key"].astype(object))
    socket = fleet["nccl_socket"].fillna(False).astype(bool)
    mask = socket | fleet["run_key"].astype(object).isin(flagged)
    return fleet.loc[mask.to_numpy(), ["run_key", "run", "path", "nccl_network"]].reset_index(
        drop=True)


def failed_runs(fleet: pd.DataFrame) -> pd.DataFrame:
    """Rows whose folder could not be read (status error or timeout)."""
    mask = fleet["status"].astype(object).isin(("error", "timeout"))
    return fleet.loc[mask.to_numpy(), ["run_key", "path", "status", "error"]].reset_index(
        drop=True)


def summary(fleet: Fleet) -> dict[str, Any]:
    """The summary as plain data (``--json``'s ``summary``)."""
    def records(df: pd.DataFrame) -> list[dict[str, Any]]:
        return [{k: (None if _isna(v) else v) for k, v in row.items()}
                for row in df.to_dict("records")]

    return {"slow_runs": records(slow_runs(fleet.fleet)),
            "repeat_offender_hosts": records(repeat_hosts(fleet.ranks)),
            "fallback_network_runs": records(fallback_runs(fleet.fleet, fleet.findings)),
            "failed_runs": records(failed_runs(fleet.fleet)),
            "stats": dict(fleet.stats)}


def _isna(v: Any) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def render(fleet: Fleet, console: Console) -> None:
    """The terminal summary (rich): counts, then each list that has rows."""
    from rich.table import Table

    from ..reports.safe_text import visible

    f = fleet.fleet
    s = fleet.stats
    console.print(f"[bold]Fleet[/bold]: {len(f)} runs in {s.get('folders', 0)} job folders "
                  f"({s.get('cached', 0)} cached, {s.get('parsed', 0)} parsed, "
                  f"{s.get('analysed', 0)} analysed again, {s.get('failed', 0)} failed) "
                  f"in {s.get('wall_s', 0):.1f} s")
    sev = {k: int(f[f"findings_{k}"].fillna(0).sum()) for k in ("critical", "warning", "info")}
    console.print(f"findings: {sev['critical']} critical, {sev['warning']} warning, "
                  f"{sev['info']} info")

    def table(title: str, df: pd.DataFrame, cols: list[str], fmt: dict[str, str]) -> None:
        if not len(df):
            return
        t = Table(title=title, title_justify="left", show_edge=False)
        for c in cols:
            t.add_column(c, overflow="fold")
        for row in df.head(SHOWN).itertuples(index=False):
            vals = row._asdict()
            t.add_row(*[visible(_fmt(vals.get(c), fmt.get(c))) for c in cols])
        console.print(t)
        if len(df) > SHOWN:
            console.print(f"  ... {len(df) - SHOWN} more (--json or --out for all)")

    table(f"Slowest runs against their history (below {SLOW_SHARE:.0%} of the median per GPU "
          "of runs of the same metric, world size and formats)", slow_runs(f),
          ["run", "path", "metric", "per_gpu", "history_median", "share", "history_runs"],
          {"per_gpu": ",.2f", "history_median": ",.2f", "share": ".0%"})
    table(f"Repeat-offender hosts (a straggler on them in {REPEATS}+ runs)",
          repeat_hosts(fleet.ranks), ["host", "straggler_runs", "runs", "ranks"], {})
    table("Runs on a fallback network (NCCL over sockets)",
          fallback_runs(f, fleet.findings), ["run", "path", "nccl_network"], {})
    table("Runs that could not be read", failed_runs(f), ["path", "status", "error"], {})


def _fmt(v: Any, spec: str | None) -> str:
    if v is None or _isna(v):
        return ""
    if spec:
        try:
            return format(v, spec)
        except (TypeError, ValueError):
            pass
    return str(v)
