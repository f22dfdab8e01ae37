"""One job folder's Dataset summed up for the fleet: its fleet rows (one per run), its
findings with hosts, its ranks, its job figures. The numbers are the report's own: the
same analysis context (:class:`dptrace.analyses.Analyses`) and findings
(:func:`dptrace.findings.build`) that ``dptrace report`` of the folder builds."""

from __future__ import annotations

import importlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
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


@dataclass(frozen=True)
class Place:
    """Where a run's fleet row comes from: its job folder, the start of its run keys
    (:func:`.cache.run_prefix`), the folder's parse time and its analysis share, and
    whether it was parsed or analysed only (the row's ``cache``)."""

    folder: str
    key: str
    parse_s: float
    analysis_s: float
    cache: str


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
    place = Place(folder, key, parse_s, time.perf_counter() - t0, cache)
    return tables_of(ds, dict.fromkeys(ds.run_ids, place), ctx)[0]


def summarise_many(parts: Sequence[tuple[Dataset, str, str, float, str]], *, warmup: float,
                   thresholds: Mapping[str, float], joint: Dataset | None = None,
                   ) -> tuple[dict[str, pd.DataFrame], list[list[dict[str, Any]]]]:
    """:func:`summarise` of several job folders' Datasets, ``(ds, folder, key, parse_s,
    cache)`` each, whose run ids are all distinct, through one analysis context of their
    :meth:`Dataset.concat` (the analysis of small runs has a fixed cost per context that
    this pays once). Each folder's rows are those :func:`summarise` gives it alone: every
    derived table the rows read is per run (docs/fleet.md, "One analysis for many
    folders"), and the findings judge each run on its own. ``analysis_s`` is the context's
    time shared out evenly. Gives the fleet tables of all the folders (each conformed
    once) and, per folder, its fleet rows as dicts (run, status, ...). ``joint``: that
    concat, when the caller has it already (:func:`.joint.together`)."""
    ids = [r for ds, *_ in parts for r in ds.run_ids]
    if len(ids) != len(set(ids)):
        raise ValueError("summarise_many: run ids must be distinct across the folders")
    both = joint if joint is not None else Dataset.concat([p[0] for p in parts])
    places = [(Place(folder, key, parse_s, 0.0, cache), ds.run_ids)
              for ds, folder, key, parse_s, cache in parts]
    tables, rows = summarise_together(both, places, warmup=warmup, thresholds=thresholds)
    return tables, [[rows[r] for r in ids] for _, ids in places]


def summarise_together(ds: Dataset, places: Sequence[tuple[Place, Sequence[str]]], *,
                       warmup: float, thresholds: Mapping[str, float],
                       ) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]]]:
    """The fleet tables of ``ds``, a Dataset of several job folders' runs (``places``: each
    folder's :class:`Place` and its run ids; every run of ``ds`` in one), through one
    analysis context and one findings table (see :func:`summarise_many`); the
    ``analysis_s`` of the places is the context's time shared out evenly. Also each run's
    fleet row as a dict, by run."""
    import time

    t0 = time.perf_counter()
    ctx = context(ds, warmup=warmup, thresholds=thresholds)
    share = (time.perf_counter() - t0) / max(1, len(places))
    of_run = {r: Place(p.folder, p.key, p.parse_s, share, p.cache)
              for p, ids in places for r in ids}
    return tables_of(ds, of_run, ctx)


def tables_of(ds: Dataset, places: Mapping[str, Place], ctx: Mapping[str, Any],
              ) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]]]:
    """The fleet tables of the runs of ``ds`` (each run's :class:`Place` in ``places``)
    from a :func:`context` that holds them (and maybe other runs: every lookup is by run),
    and each run's fleet row as a dict, by run."""
    rows, frows, rrows = _rows(ds, places, ctx)
    keys = {r: p.key for r, p in places.items()}
    return ({"fleet": _table(rows, ft.FLEET),
             "fleet_findings": _table(frows, ft.FLEET_FINDINGS),
             "fleet_ranks": _table(rrows, ft.FLEET_RANKS),
             "job_figures": _job_figures(ctx["jobs"], keys)},
            {row["run"]: row for row in rows})


def _rows(ds: Dataset, places: Mapping[str, Place], ctx: Mapping[str, Any],
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The fleet, fleet_findings and fleet_ranks rows (dicts) of the runs of ``ds``: every
    table grouped by run once (a Dataset of 64 folders: one pass each, not one per run)."""
    from .. import __version__

    found = _by_run(ctx["found"])
    shares = _shares(ctx["shares"])
    steps = _step_times(ctx["instances"])
    hosts = hosts_of(ds)
    host_ranks: dict[str, set[int]] = {}
    for run_id, host_rank in hosts:
        host_ranks.setdefault(run_id, set()).add(host_rank)
    statuses = _statuses(ds.sources)
    times = _times(ds)
    with_rows = _Tables(ds)
    rows, frows, rrows = [], [], []
    for run in ds.runs.itertuples(index=False):
        rid = str(run.run)
        place = places[rid]
        rkey = f"{place.key}/{rid}"
        mine = found.get(rid, [])
        sev = Counter(str(f["severity"]) for f in mine)
        s_ranks = sorted({int(f["rank"]) for f in mine if f["kind"] in STRAGGLER_KINDS
                          and not _missing(f["rank"])})
        s_hosts = list(dict.fromkeys(h for r in s_ranks if (h := hosts.get((rid, r)))))
        fig = ctx["job_first"].get(rid)
        world = _int(run.world_size)
        value = _float(fig.get("value")) if fig else None
        fmts, stat_text, status = statuses.get(rid) or with_rows.status(rid)
        net = ctx["nccl_first"].get(rid)
        rank_shares = shares.get(rid, [])
        rows.append({
            "run_key": rkey, "run": rid, "label": _str(run.label), "job_id": _str(run.job_id),
            "path": place.folder, **times.get(rid, {}),
            "world_size": world, "world_size_from": _str(run.world_size_from),
            "nodes": _int(run.nodes), "launcher": _str(run.launcher),
            "formats": fmts, "statuses": stat_text, "status": status, "error": None,
            "metric": _str(fig.get("metric")) if fig else None, "value": value,
            "how": _str(fig.get("how")) if fig else None,
            "rule": _str(fig.get("rule")) if fig else None,
            "per_gpu": value / world if value is not None and world else None,
            "step_time_s": steps.get(rid),
            "comm_share": _comm_share(ctx["comm_first"].get(rid), rank_shares),
            **_network(net),
            "findings_critical": int(sev.get("critical", 0)),
            "findings_warning": int(sev.get("warning", 0)),
            "findings_info": int(sev.get("info", 0)),
            "top_kind": str(mine[0]["kind"]) if mine else None,
            "top_finding": str(mine[0]["message"]) if mine else None,
            "straggler_ranks": ",".join(map(str, s_ranks)) or None,
            "straggler_hosts": ",".join(s_hosts) or None,
            "parse_s": place.parse_s, "analysis_s": place.analysis_s, "cache": place.cache,
            "dptrace_version": __version__,
        })
        for f in mine:
            rank = None if _missing(f["rank"]) else int(f["rank"])
            frows.append({"run_key": rkey, "run": rid, "severity": str(f["severity"]),
                          "kind": str(f["kind"]), "scope": str(f["scope"]),
                          "subject": f["subject"], "rank": rank,
                          "host": hosts.get((rid, rank)) if rank is not None else None,
                          "value": f["value"], "threshold": f["threshold"],
                          "message": f["message"]})
        rrows.extend(_ranks(rid, rkey, rank_shares, host_ranks.get(rid, set()), hosts,
                            set(s_ranks)))
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


class _Tables:
    """Which tables of a Dataset have rows of which run (found on first use)."""

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds
        self._of_run: dict[str, list[str]] | None = None

    def status(self, run: str) -> tuple[str, str, str]:
        """(formats, statuses, status) of a run that owns no input: a part of a file that
        holds several runs (an MLPerf log's, a document's), split by the runs rules. Its
        formats are those of the tables that have its rows; ok when it has rows, else
        failed."""
        from .. import registry

        if self._of_run is None:
            self._of_run = {}
            for name in self.ds.tables:
                df = self.ds[name]
                if "run" in df.columns:
                    for r in df["run"].dropna().astype(object).unique():
                        self._of_run.setdefault(str(r), []).append(name)
        of_table = {t: name for name, p in registry.parsers().items() for t in p.tables}
        fmts = sorted({of_table.get(name, name) for name in self._of_run.get(run, [])})
        return ",".join(fmts), "", "ok" if fmts else "failed"


def _times(ds: Dataset) -> dict[str, dict[str, Any]]:
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


def _by_run(found: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """The findings of each run as dicts, in the table's order."""
    out: dict[str, list[dict[str, Any]]] = {}
    if not len(found):
        return out
    cols = ["run", "severity", "kind", "scope", "subject", "rank", "value", "threshold",
            "message"]
    for rec in found[cols].astype({"run": object, "severity": object}).to_dict("records"):
        run = rec["run"]
        if not _missing(run):
            out.setdefault(str(run), []).append(rec)
    return out


def _shares(shares: pd.DataFrame | None) -> dict[str, list[tuple[Any, Any]]]:
    """(rank, comm_share) of each run's rows of the rank-share table, in its order."""
    out: dict[str, list[tuple[Any, Any]]] = {}
    if shares is None or not len(shares):
        return out
    for run, rank, share in zip(shares["run"].astype(object).tolist(),
                                shares["rank"].astype(object).tolist(),
                                shares["comm_share"].tolist(), strict=True):
        if not _missing(run):
            out.setdefault(str(run), []).append((rank, share))
    return out


def _step_times(instances: pd.DataFrame | None) -> dict[str, float]:
    """run -> the median step time of its training instances, where the table has one."""
    if instances is None or not len(instances) or "run" not in instances.columns:
        return {}
    col = next((c for c in ("step_time_s", "step_s", "time_per_step_s")
                if c in instances.columns), None)
    if col is None:
        return {}
    mine = instances
    if "phase" in mine.columns:
        mine = mine[(mine["phase"].astype(object) == "train").to_numpy()]
    vals = pd.to_numeric(mine[col], errors="coerce").to_numpy(dtype="float64",
                                                               na_value=np.nan)
    runs = mine["run"].astype(object).to_numpy()
    ok = ~np.isnan(vals)
    out: dict[str, float] = {}
    for run, pos in pd.Series(runs[ok]).groupby(runs[ok], sort=False).indices.items():
        out[str(run)] = float(np.median(vals[ok][pos]))
    return out


def _rank_shares(a: Analyses) -> pd.DataFrame | None:
    """run, rank, comm_share of the first derived table that has them."""
    for name, col in _RANK_SHARES:
        df = a.get(name)
        if df is not None and len(df) and {"run", "rank", col} <= set(df.columns):
            return df[["run", "rank", col]].rename(columns={col: "comm_share"})
    return None


def _comm_share(row: Mapping[str, Any] | None, shares: Sequence[tuple[Any, Any]],
                ) -> float | None:
    """The run's mean communication share: its communication.jobs row's, else the mean of
    its ranks' shares (``shares``: its (rank, share) rows)."""
    if row is not None and "comm_share_mean" in row:
        return _float(row["comm_share_mean"])
    vals = np.array([s for _, s in shares if not _missing(s)], dtype="float64")
    if len(vals):
        return float(vals.sum() / len(vals))   # (as Series.mean: the sum, then / count)
    return None


def _ranks(run: str, rkey: str, shares: Sequence[tuple[Any, Any]], host_ranks: set[int],
           hosts: Mapping[tuple[str, int], str], stragglers: set[int]) -> list[dict[str, Any]]:
    """The fleet_ranks rows of one run: every rank a share (``shares``: its (rank, share)
    rows) or a host (``host_ranks``) is known of."""
    share: dict[int, float | None] = {}
    for r, s in shares:
        if not _missing(r):
            share.setdefault(int(r), _float(s))
    ranks = sorted(set(share) | host_ranks | stragglers)
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


def _missing(v: Any) -> bool:
    """None, NaN or NA."""
    return v is None or (not isinstance(v, str) and bool(pd.isna(v)))


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
