"""One job folder's Dataset summed up for the fleet: its fleet rows (one per run), its
findings with hosts, its ranks, its job figures. The numbers are the report's own: the
same analysis context (:class:`dptrace.analyses.Analyses`) and findings
(:func:`dptrace.findings.build`) that ``dptrace report`` of the folder builds."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .. import schema
from ..analyses import Analyses
from ..dataset import Dataset
from . import tables as ft

#: findings of these kinds name a rank that the others waited for (a straggler)
STRAGGLER_KINDS = ("throughput_straggler", "compute_straggler", "collective_straggler",
                   "negotiation_straggler", "cross_source_straggler", "waiting_rank")
#: derived tables that hold a communication share per rank, and its column
_RANK_SHARES = (("communication.ranks", "comm_share"), ("torchtrace.ranks", "comm_share"))


def findings_of(a: Analyses) -> pd.DataFrame:
    """The findings table of the context's Dataset (every run judged on its own)."""
    return importlib.import_module("dptrace.findings").build(a)


def hosts_of(ds: Dataset) -> dict[tuple[str, int], str]:
    """(run, rank) -> host, from every parsed table that names both (the MPI profiles'
    host per rank, NCCL's lines, ...): the first host a table gives a rank."""
    out: dict[tuple[str, int], str] = {}
    for name in ds.tables:
        df = ds[name]
        if not {"rank", "host", "run"} <= set(df.columns):
            continue
        part = df[["run", "rank", "host"]].dropna().drop_duplicates(["run", "rank"])
        for run, rank, host in part.itertuples(index=False):
            out.setdefault((str(run), int(rank)), str(host))
    return out


def context(ds: Dataset, *, warmup: float, thresholds: Mapping[str, float],
            ) -> dict[str, Any]:
    """The derived tables the fleet rows of ``ds``'s runs are made of: one analysis context
    and one findings table for all its runs (each run judged on its own, as ``dptrace report``
    of a Dataset of several runs judges them)."""
    a = Analyses(ds, {"warmup": warmup, "thresholds": dict(thresholds), "view": "report"})
    jobs, comm, nccl = (a.get("throughput.job"), a.get("communication.jobs"),
                        a.get("nccl.overview"))
    return {"found": findings_of(a), "jobs": jobs, "shares": _rank_shares(a),
            "instances": a.get("throughput.instances"), "job_first": _firsts(jobs),
            "comm_first": _firsts(comm), "nccl_first": _firsts(nccl)}


def summarise(ds: Dataset, folder: str, key: str, *, warmup: float,
              thresholds: Mapping[str, float], parse_s: float, cache: str,
              ) -> dict[str, pd.DataFrame]:
    """The fleet tables of one job folder's Dataset (``key``: the start of its run keys,
    :func:`.cache.run_prefix`):
    ``{"fleet", "fleet_findings", "fleet_ranks", "job_figures"}``, each conformed to its
    schema (empty tables included). A run's row agrees with ``dptrace report FOLDER``."""
    import time

    t0 = time.perf_counter()
    ctx = context(ds, warmup=warmup, thresholds=thresholds)
    return rows_of(ds, folder, key, ctx, parse_s=parse_s,
                   analysis_s=time.perf_counter() - t0, cache=cache)


def summarise_many(parts: Sequence[tuple[Dataset, str, str, float, str]], *, warmup: float,
                   thresholds: Mapping[str, float], joint: Dataset | None = None,
                   ) -> tuple[dict[str, pd.DataFrame], list[list[dict[str, Any]]]]:
    """:func:`summarise` of several job folders' Datasets, ``(ds, folder, key, parse_s,
    cache)`` each, whose run ids are all distinct, through one analysis context of their
    :meth:`Dataset.concat` (the analysis of small runs has a fixed cost per context that
    this pays once). Each folder's rows are those :func:`summarise` gives it alone: every
    derived table is per run. ``analysis_s`` is the context's time shared out evenly.
    Gives the fleet tables of all the folders (each conformed once) and, per folder, its
    fleet rows as dicts (run, status, ...). ``joint``: that concat, when the caller has it
    already (the one load the parts were cut from, :mod:`.joint`: the same runs, rows and
    dtypes)."""
    import time

    ids = [r for ds, *_ in parts for r in ds.run_ids]
    if len(ids) != len(set(ids)):
        raise ValueError("summarise_many: run ids must be distinct across the folders")
    t0 = time.perf_counter()
    both = joint if joint is not None else Dataset.concat([p[0] for p in parts])
    ctx = context(both, warmup=warmup, thresholds=thresholds)
    share = (time.perf_counter() - t0) / max(1, len(parts))
    rows: list[dict[str, Any]] = []
    frows: list[dict[str, Any]] = []
    rrows: list[dict[str, Any]] = []
    each = []
    keys: dict[str, str] = {}
    for ds, folder, key, parse_s, cache in parts:
        mine = _rows(ds, folder, key, ctx, parse_s=parse_s, analysis_s=share, cache=cache)
        rows.extend(mine[0])
        frows.extend(mine[1])
        rrows.extend(mine[2])
        each.append(mine[0])
        keys.update((r, key) for r in ds.run_ids)
    return {"fleet": _table(rows, ft.FLEET), "fleet_findings": _table(frows, ft.FLEET_FINDINGS),
            "fleet_ranks": _table(rrows, ft.FLEET_RANKS),
            "job_figures": _job_figures(ctx["jobs"], keys)}, each


def rows_of(ds: Dataset, folder: str, key: str, ctx: Mapping[str, Any], *, parse_s: float,
            analysis_s: float, cache: str) -> dict[str, pd.DataFrame]:
    """The fleet tables of the runs of ``ds`` (one job folder) from a :func:`context` that
    holds them (and maybe other folders' runs: every lookup is by run)."""
    rows, frows, rrows = _rows(ds, folder, key, ctx, parse_s=parse_s, analysis_s=analysis_s,
                               cache=cache)
    return {"fleet": _table(rows, ft.FLEET), "fleet_findings": _table(frows, ft.FLEET_FINDINGS),
            "fleet_ranks": _table(rrows, ft.FLEET_RANKS),
            "job_figures": _job_figures(ctx["jobs"], dict.fromkeys(ds.run_ids, key))}


def _rows(ds: Dataset, folder: str, key: str, ctx: Mapping[str, Any], *, parse_s: float,
          analysis_s: float, cache: str,
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The fleet, fleet_findings and fleet_ranks rows (dicts) of the runs of ``ds``."""
    from .. import __version__

    found, shares, instances = ctx["found"], ctx["shares"], ctx["instances"]
    hosts = hosts_of(ds)
    found_runs = found["run"].astype(object)
    rows, frows, rrows = [], [], []
    statuses = _statuses(ds.sources)
    times = _times(ds, folder)
    for run in ds.runs.itertuples(index=False):
        rid = str(run.run)
        rkey = f"{key}/{rid}"
        mine = found[(found_runs == rid).to_numpy()]
        sev = mine["severity"].astype(object).value_counts()
        strag = mine[mine["kind"].astype(object).isin(STRAGGLER_KINDS) & mine["rank"].notna()]
        s_ranks = sorted({int(r) for r in strag["rank"]})
        s_hosts = list(dict.fromkeys(h for r in s_ranks if (h := hosts.get((rid, r)))))
        fig = ctx["job_first"].get(rid)
        world = _int(run.world_size)
        value = _float(fig.get("value")) if fig else None
        fmts, stat_text, status = statuses.get(rid) or _from_tables(ds, rid)
        net = ctx["nccl_first"].get(rid)
        rows.append({
            "run_key": rkey, "run": rid, "label": _str(run.label), "job_id": _str(run.job_id),
            "path": folder, **times.get(rid, {}),
            "world_size": world, "world_size_from": _str(run.world_size_from),
            "nodes": _int(run.nodes), "launcher": _str(run.launcher),
            "formats": fmts, "statuses": stat_text, "status": status, "error": None,
            "metric": _str(fig.get("metric")) if fig else None, "value": value,
            "how": _str(fig.get("how")) if fig else None,
            "rule": _str(fig.get("rule")) if fig else None,
            "per_gpu": value / world if value is not None and world else None,
            "step_time_s": _step_time(instances, rid),
            "comm_share": _comm_share(ctx["comm_first"].get(rid), shares, rid),
            **_network(net),
            "findings_critical": int(sev.get("critical", 0)),
            "findings_warning": int(sev.get("warning", 0)),
            "findings_info": int(sev.get("info", 0)),
            "top_kind": str(mine["kind"].iloc[0]) if len(mine) else None,
            "top_finding": str(mine["message"].iloc[0]) if len(mine) else None,
            "straggler_ranks": ",".join(map(str, s_ranks)) or None,
            "straggler_hosts": ",".join(s_hosts) or None,
            "parse_s": parse_s, "analysis_s": analysis_s, "cache": cache,
            "dptrace_version": __version__,
        })
        for f in mine.itertuples(index=False):
            rank = None if pd.isna(f.rank) else int(f.rank)
            frows.append({"run_key": rkey, "run": rid, "severity": str(f.severity),
                          "kind": str(f.kind), "scope": str(f.scope), "subject": f.subject,
                          "rank": rank, "host": hosts.get((rid, rank)) if rank is not None
                          else None, "value": f.value, "threshold": f.threshold,
                          "message": f.message})
        rrows.extend(_ranks(rid, rkey, shares, hosts, set(s_ranks)))
    return rows, frows, rrows


def error_row(folder: str, key: str, status: str, error: str, parse_s: float = 0.0,
              ) -> pd.DataFrame:
    """The fleet row of a job folder that could not be read: its error, never the survey's."""
    from .. import __version__

    return _table([{"run_key": f"{key}/", "run": os.path.basename(os.path.normpath(folder)),
                    "label": os.path.basename(os.path.normpath(folder)), "path": folder,
                    "status": status, "error": error, "parse_s": parse_s, "cache": "parsed",
                    "dptrace_version": __version__, "findings_critical": 0,
                    "findings_warning": 0, "findings_info": 0}], ft.FLEET)


def _table(rows: Sequence[Mapping[str, Any]], table: schema.Table) -> pd.DataFrame:
    names = table.names
    df = pd.DataFrame(list(rows), columns=names) if rows else pd.DataFrame(
        {c: [] for c in names})
    return schema.conform(df, table)


def _job_figures(jobs: pd.DataFrame | None, keys: Mapping[str, str]) -> pd.DataFrame:
    """The job figures of the runs ``keys`` names (run -> the start of its run key)."""
    table = ft.JOB_FIGURES
    if jobs is None or not len(jobs):
        return table.empty()
    df = jobs[jobs["run"].astype(object).isin(set(keys)).to_numpy()].reset_index(drop=True)
    if not len(df):
        return table.empty()
    df = df.copy()
    df["run_key"] = [f"{keys[str(r)]}/{r}" for r in df["run"].astype(object)]
    df["run"] = df["run"].astype(object)
    return schema.conform(df[[c for c in table.names if c in df.columns]], table)[
        table.names]


def _firsts(df: pd.DataFrame | None) -> dict[str, dict[str, Any]]:
    """run -> the first row of that run in a derived table, as a dict."""
    if df is None or not len(df) or "run" not in df.columns:
        return {}
    out: dict[str, dict[str, Any]] = {}
    runs = df["run"].astype(object).tolist()
    for i, run in enumerate(runs):
        if str(run) not in out:
            out[str(run)] = df.iloc[i].to_dict()
    return out


def _statuses(sources: pd.DataFrame) -> dict[str, tuple[str, str, str]]:
    """run -> (formats, 'ok 4, partial 1', overall status: failed when no input gave
    data, partial when one was not ok, else ok; skipped inputs do not count)."""
    out = {}
    for run, part in sources.groupby(sources["run"].astype(object), sort=False):
        fmts = ",".join(sorted({str(f) for f in part["format"].dropna()}))
        counts = part["status"].astype(object).value_counts()
        text = ", ".join(f"{s} {int(n)}" for s, n in counts.items())
        judged = part[part["status"] != "skipped"]["status"]
        if not len(judged) or not judged.isin(("ok", "partial")).any():
            status = "failed"
        elif (judged != "ok").any():
            status = "partial"
        else:
            status = "ok"
        out[str(run)] = (fmts, text, status)
    return out


def _from_tables(ds: Dataset, run: str) -> tuple[str, str, str]:
    """(formats, statuses, status) of a run that owns no input: a part of a file that holds
    several runs (an MLPerf log's, a document's), split by the runs rules. Its formats are
    those of the tables that have its rows; ok when it has rows, else failed."""
    from .. import registry

    of_table = {t: name for name, p in registry.parsers().items() for t in p.tables}
    fmts = sorted({of_table.get(name, name) for name in ds.tables
                   if "run" in ds[name].columns
                   and (ds[name]["run"].astype(object) == run).any()})
    return ",".join(fmts), "", "ok" if fmts else "failed"


def _times(ds: Dataset, folder: str) -> dict[str, dict[str, Any]]:
    """run -> start, end and where they came from: a table's timestamps (a column of
    dtype datetime64), else the oldest and newest modification time of its files."""
    out: dict[str, dict[str, Any]] = {}
    for name in ds.tables:
        df = ds[name]
        for col in df.columns:
            if col != "run" and str(df[col].dtype).startswith("datetime64"):
                for run, s in df.groupby(df["run"].astype(object), sort=False)[col]:
                    if s.notna().any() and str(run) not in out:
                        out[str(run)] = {"start": s.min(), "end": s.max(),
                                         "time_from": f"{name}.{col}"}
    for run, part in ds.sources.groupby(ds.sources["run"].astype(object), sort=False):
        if str(run) in out:
            continue
        stamps = []
        for src in part["source"].astype(object):
            try:
                stamps.append(os.stat(str(src).split("::")[0]).st_mtime_ns)
            except OSError:
                continue
        if stamps:
            out[str(run)] = {"start": pd.Timestamp(min(stamps), unit="ns"),
                             "end": pd.Timestamp(max(stamps), unit="ns"),
                             "time_from": "file mtimes"}
    return out


def _rank_shares(a: Analyses) -> pd.DataFrame | None:
    """run, rank, comm_share of the first derived table that has them."""
    for name, col in _RANK_SHARES:
        df = a.get(name)
        if df is not None and len(df) and {"run", "rank", col} <= set(df.columns):
            return df[["run", "rank", col]].rename(columns={col: "comm_share"})
    return None


def _comm_share(row: Mapping[str, Any] | None, shares: pd.DataFrame | None,
                run: str) -> float | None:
    """The run's mean communication share: its communication.jobs row's, else the mean of
    its ranks' shares."""
    if row is not None and "comm_share_mean" in row:
        return _float(row["comm_share_mean"])
    if shares is not None:
        mine = shares[shares["run"].astype(object) == run]["comm_share"].dropna()
        if len(mine):
            return float(mine.mean())
    return None


def _ranks(run: str, rkey: str, shares: pd.DataFrame | None,
           hosts: Mapping[tuple[str, int], str], stragglers: set[int]) -> list[dict[str, Any]]:
    """The fleet_ranks rows of one run: every rank a share or a host is known of."""
    share: dict[int, float | None] = {}
    if shares is not None:
        for r, s in shares[shares["run"].astype(object) == run][["rank", "comm_share"]
                                                                 ].itertuples(index=False):
            if pd.notna(r):
                share.setdefault(int(r), _float(s))
    ranks = sorted(set(share) | {r for (rr, r) in hosts if rr == run} | stragglers)
    return [{"run_key": rkey, "run": run, "rank": r, "host": hosts.get((run, r)),
             "comm_share": share.get(r), "straggler": r in stragglers} for r in ranks]


def _network(row: Mapping[str, Any] | None) -> dict[str, Any]:
    """nccl_network, nccl_socket and gdr of a run's NCCL overview row."""
    if row is None:
        return {"nccl_network": None, "nccl_socket": None, "gdr": None}
    net = _int(row.get("net_processes"))
    gdr = _int(row.get("gdrdma_processes"))
    return {"nccl_network": _str(row.get("transports")) or _str(row.get("networks")),
            "nccl_socket": bool((_int(row.get("socket_processes")) or 0) > 0),
            "gdr": (gdr >= net) if net and gdr is not None else None}


def _step_time(instances: pd.DataFrame | None, run: str) -> float | None:
    """The median step time of the run's training instances, where the table has one."""
    if instances is None or not len(instances):
        return None
    col = next((c for c in ("step_time_s", "step_s", "time_per_step_s")
                if c in instances.columns), None)
    if col is None:
        return None
    mine = instances[instances["run"].astype(object) == run]
    if "phase" in mine.columns:
        mine = mine[mine["phase"].astype(object) == "train"]
    vals = pd.to_numeric(mine[col], errors="coerce").dropna()
    return float(vals.median()) if len(vals) else None


def _str(v: Any) -> str | None:
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


def _int(v: Any) -> int | None:
    try:
        return None if v is None or pd.isna(v) else int(v)
    except (TypeError, ValueError):
        return None


def _float(v: Any) -> float | None:
    try:
        return None if v is None or pd.isna(v) else float(v)
    except (TypeError, ValueError):
        return None
