"""NCCL setup of a job, from its NCCL_DEBUG=INFO lines (tables ``nccl_setup``,
``nccl_events``, ``nccl_env``): per run, the network NCCL chose between nodes, on how many
processes and hosts, the transports and GPUDirect RDMA of its channels, and its warnings,
errors and timeouts. Pure functions of tables: no report, no I/O."""

from __future__ import annotations

import pandas as pd

from .keys import plain

#: networks that mean "TCP sockets between nodes" ('Using network Socket', 'NET/Socket :
#: Using', channels 'via NET/Socket/0')
SOCKET = "Socket"

OVERVIEW_COLUMNS = ("run", "versions", "processes", "ranks", "hosts", "nodes", "world_size",
                    "networks", "socket_processes", "socket_ranks", "socket_devices",
                    "plugins", "providers", "transports", "net_processes", "gdrdma_processes",
                    "warnings", "errors", "timeouts", "first_warning", "first_error",
                    "timeout_ops", "timeout_ms", "timeout_ranks", "source", "lineno")


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
    info = {} if runs is None or runs.empty else {
        str(r["run"]): r for _, r in runs.iterrows()}
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
            "timeout_ms": None if tmo["timeout_ms"].dropna().empty
            else float(tmo["timeout_ms"].max()),
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
