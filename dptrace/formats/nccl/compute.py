"""NCCL setup of a job, from its NCCL_DEBUG=INFO lines (tables ``nccl_setup``,
``nccl_events``, ``nccl_env``): per run, the network NCCL chose between nodes, on how many
processes and hosts, the transports and GPUDirect RDMA of its channels, and its warnings,
errors and timeouts. Pure functions of tables: no report, no I/O."""

from __future__ import annotations

import pandas as pd

from ...analysis.keys import plain

#: networks that mean "TCP sockets between nodes" ('Using network Socket', 'NET/Socket :
#: Using', channels 'via NET/Socket/0')
SOCKET = "Socket"

OVERVIEW_COLUMNS = ("run", "versions", "processes", "ranks", "hosts", "nodes", "world_size",
                    "networks", "socket_processes", "socket_ranks", "socket_devices",
                    "plugins", "providers", "transports", "net_processes", "gdrdma_processes",
                    "warnings", "errors", "timeouts", "first_warning", "first_error",
                    "timeout_ops", "timeout_s", "timeout_ranks", "source", "lineno")


def _join(values: pd.Series) -> str | None:
    seen = sorted({str(v) for v in values.dropna().tolist()})
    return ", ".join(seen) if seen else None


def _ranks(values: pd.Series) -> str | None:
    ranks = sorted({int(v) for v in values.dropna().tolist()})
    if not ranks:
        return None
    if len(ranks) > 8:
        return f"{', '.join(map(str, ranks[:8]))}, ... ({len(ranks)})"
    return ", ".join(map(str, ranks))


def overview(setup: pd.DataFrame, events: pd.DataFrame, runs: pd.DataFrame | None = None
             ) -> pd.DataFrame:
    """One row per run with NCCL lines: versions, processes, ranks and hosts that printed,
    the job's nodes and world size (``runs``), networks chosen (``IB x16``), the processes
    on sockets, plugins and providers, transports of the channels, processes with channels
    through the network and how many of them use GPUDirect RDMA, and the counts of
    warnings, errors and timeouts (with the first of each)."""
    rows = []
    setup = setup if "run" in setup.columns else setup.assign(run="")
    events = events if "run" in events.columns else events.assign(run="")
    info = {} if runs is None or runs.empty else {   # (columns, not iterrows: one value each)
        str(run): {"nodes": nodes, "world_size": world}
        for run, nodes, world in zip(runs["run"].tolist(), runs["nodes"].tolist(),
                                     runs["world_size"].tolist(), strict=True)}
    run_ids = list(dict.fromkeys([*plain(setup["run"]).astype(str).tolist(),
                                  *plain(events["run"]).astype(str).tolist()]))
    for run in run_ids:
        s = setup[plain(setup["run"]).astype(str) == run]
        e = events[plain(events["run"]).astype(str) == run]
        nets = s["network"].dropna().astype(str)
        counts = nets.value_counts()
        networks = ", ".join(f"{n} x{c}" for n, c in counts.items()) or None
        sock = s[s["network"].astype("string").fillna("") == SOCKET]
        net = s[s["net_channels"].fillna(0).astype("int64") > 0]
        warn, err, tmo = (e[e["kind"] == k] for k in ("warn", "error", "timeout"))
        r = info.get(run)
        rows.append({
            "run": run, "versions": _join(s["version"]), "processes": len(s),
            "ranks": int(s["rank"].dropna().nunique()), "hosts": int(s["host"].nunique()),
            "nodes": None if r is None or pd.isna(r["nodes"]) else int(r["nodes"]),
            "world_size": None if r is None or pd.isna(r["world_size"])
            else int(r["world_size"]),
            "networks": networks, "socket_processes": len(sock),
            "socket_ranks": _ranks(sock["rank"]), "socket_devices": _join(sock["net_devices"]),
            "plugins": _join(s["plugin"]), "providers": _join(s["provider"]),
            "transports": _join(pd.Series(
                [t for v in s["transports"].dropna().tolist() for t in str(v).split(",")],
                dtype="object")),
            "net_processes": len(net),
            "gdrdma_processes": int(net["gdrdma"].fillna(False).astype(bool).sum()),
            "warnings": len(warn), "errors": len(err), "timeouts": len(tmo),
            "first_warning": None if warn.empty else str(warn["message"].iloc[0]),
            "first_error": None if err.empty else str(err["message"].iloc[0]),
            "timeout_ops": _join(tmo["op"]),
            "timeout_s": None if tmo["timeout_s"].dropna().empty
            else float(tmo["timeout_s"].max()),
            "timeout_ranks": _ranks(tmo["rank"]),
            "source": _join(s["source"]) if len(s) else _join(e["source"]),
            "lineno": None if s.empty else int(s["lineno"].min()),
        })
    return pd.DataFrame(rows, columns=list(OVERVIEW_COLUMNS))


def processes(setup: pd.DataFrame) -> pd.DataFrame:
    """The processes, by run, rank (unknown last), host and pid: what each chose."""
    cols = [c for c in ("run", "rank", "host", "pid", "device", "network", "net_devices",
                        "plugin", "provider", "transports", "net_channels", "gdrdma",
                        "version", "warnings", "source", "lineno") if c in setup.columns]
    by = [c for c in ("run", "rank", "host", "pid") if c in setup.columns]
    return setup[cols].sort_values(by, na_position="last", kind="stable").reset_index(drop=True)


#: the rows of :func:`settings`, in order (``NCCL_*`` and ``HOROVOD_*`` variables follow,
#: by name)
SETTING_ROWS = ("NCCL version", "NCCL network", "net plugin", "libfabric provider",
                "transports", "GPUDirect RDMA", "NCCL nodes (nNodes)")
#: variables of ``nccl_env`` that are settings of the job's communication (the layout
#: lines, SLURM_NNODES and --host, are the runs table's nodes)
SETTING_PREFIXES = ("NCCL_", "HOROVOD_")
#: a variable a run whose NCCL lines were read does not state
NOT_STATED = "not stated"


def _networks(s: pd.DataFrame) -> str | None:
    """``Socket``; ``IB (6), Socket (2)`` when processes chose different networks."""
    counts = s["network"].dropna().astype(str).value_counts()
    if counts.empty:
        return None
    if len(counts) == 1:
        return str(counts.index[0])
    return ", ".join(f"{n} ({c})" for n, c in sorted(counts.items()))


def _gdr(s: pd.DataFrame) -> str | None:
    """``yes``, ``no`` or ``on 2 of 4 processes`` over the processes whose channels go
    through the network; None when no channel line went through it."""
    net = s[s["net_channels"].fillna(0).astype("int64") > 0]
    if net.empty:
        return None
    on = int(net["gdrdma"].fillna(False).astype(bool).sum())
    return "yes" if on == len(net) else "no" if on == 0 else f"on {on} of {len(net)} processes"


def settings(setup: pd.DataFrame | None, env: pd.DataFrame | None) -> pd.DataFrame:
    """The NCCL setup of every run, one row per run and setting: ``run``, ``setting``,
    ``value`` (text; None where the run's lines do not say it).

    Settings: the NCCL version, the network chosen between nodes (one name, or each with
    its processes when they differ), the net plugin and libfabric provider, the channels'
    transports, GPUDirect RDMA over the processes with network channels (``yes``, ``no``,
    ``on k of n processes``), the nodes of the largest communicator (``nNodes``, NCCL
    2.18+), and each ``NCCL_*`` / ``HOROVOD_*`` variable the log states (distinct values
    joined). A variable that a run with NCCL lines does not state is :data:`NOT_STATED`
    (NCCL prints each variable it reads from the environment); a run without NCCL lines
    states nothing (None)."""
    rows: list[dict[str, object]] = []
    has = setup is not None and not setup.empty and "run" in setup.columns
    nccl_runs: list[str] = []
    if has:
        assert setup is not None
        runs_col = plain(setup["run"]).astype(str)
        for run in dict.fromkeys(runs_col.tolist()):
            s = setup[(runs_col == run).to_numpy()]
            nccl_runs.append(run)
            nodes = s["nodes"].dropna() if "nodes" in s.columns else pd.Series(dtype="Int64")
            values = {
                "NCCL version": _join(s["version"]), "NCCL network": _networks(s),
                "net plugin": _join(s["plugin"]), "libfabric provider": _join(s["provider"]),
                "transports": _join(pd.Series(
                    [t for v in s["transports"].dropna().tolist() for t in str(v).split(",")],
                    dtype="object")),
                "GPUDirect RDMA": _gdr(s),
                "NCCL nodes (nNodes)": None if nodes.empty else str(int(nodes.max())),
            }
            rows += [{"run": run, "setting": k, "value": v} for k, v in values.items()]
    stated: dict[tuple[str, str], str] = {}
    if env is not None and not env.empty and "run" in env.columns:
        e = env[env["name"].astype(str).str.startswith(SETTING_PREFIXES)]
        for (run, name), g in e.groupby([plain(e["run"]).astype(str),
                                         e["name"].astype(str)], sort=False):
            stated[(str(run), str(name))] = _join(g["value"].astype("string")
                                                  .fillna("")) or ""
    names = sorted({n for _, n in stated})
    runs_seen = list(dict.fromkeys([*nccl_runs, *(r for r, _ in stated)]))
    for run in runs_seen:
        for name in names:
            v = stated.get((run, name))
            rows.append({"run": run, "setting": name,
                         "value": v if v is not None else
                         NOT_STATED if run in nccl_runs else None})
    return pd.DataFrame(rows, columns=["run", "setting", "value"])
