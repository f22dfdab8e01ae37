"""SambaNova tile utilisation: instances (tiles grouped by PID), idle tiles, overheads.

All functions take the ``tiles`` table. A data-parallel SambaFlow job runs one process per
instance; each instance owns the tiles that sntilestat lists with its PID.

Every result is per ``source`` (one listing), and per ``run`` first when the table has it
(:mod:`.keys`): ``run`` is then the first column of each result.
"""

from __future__ import annotations

import pandas as pd

from ...analysis.keys import keys, run_first

#: a tile at or above this %idle, with no PID, counts as idle
IDLE_PCT = 99.9


def instances(tiles: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, pid): the instance's tiles and how busy they kept.

    Columns: ``source``, ``pid``, ``user``, ``command``, ``tiles`` (distinct tiles),
    ``rdus`` (distinct XRDU/RDU pairs), ``rdu_list`` (e.g. ``0/0 0/1``), ``snapshots``,
    ``exec_mean_pct`` (over its tiles and snapshots), ``exec_min_pct`` (lowest tile-snapshot),
    ``pload_mean_pct``, ``aload_mean_pct``, ``chkpt_mean_pct``, ``lowest`` (True for the
    instance with the lowest ``exec_mean_pct`` in its source).
    """
    busy = tiles[tiles["pid"].notna()]
    if busy.empty:
        return run_first(pd.DataFrame(columns=keys(
            tiles, "source", "pid", "user", "command", "tiles", "rdus", "rdu_list", "snapshots",
            "exec_mean_pct", "exec_min_pct", "pload_mean_pct", "aload_mean_pct", "chkpt_mean_pct",
            "lowest")), tiles)
    busy = busy.assign(_tile=_tile_key(busy), _rdu=_num(busy["xrdu"]) + "/" + _num(busy["rdu"]))
    g = busy.groupby(keys(busy, "source", "pid"), sort=False, observed=True)
    out = pd.DataFrame({
        "user": g["user"].first(),
        "command": g["command"].first(),
        "tiles": g["_tile"].nunique(),
        "rdus": g["_rdu"].nunique(),
        "rdu_list": g["_rdu"].agg(lambda s: " ".join(dict.fromkeys(s))),
        "snapshots": g["snapshot"].nunique(),
        "exec_mean_pct": g["exec_pct"].mean(),
        "exec_min_pct": g["exec_pct"].min(),
        "pload_mean_pct": g["pload_pct"].mean(),
        "aload_mean_pct": g["aload_pct"].mean(),
        "chkpt_mean_pct": g["chkpt_pct"].mean(),
    }).reset_index()
    low = out.groupby(keys(out, "source"), observed=True)["exec_mean_pct"].transform("min")
    out["lowest"] = out["exec_mean_pct"] == low
    return run_first(out, tiles)


def idle_tiles(tiles: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, tile) that was idle in at least one snapshot.

    Columns: ``source``, ``xrdu``, ``rdu``, ``tile``, ``idle_snapshots``, ``snapshots``
    (in the source), ``always_idle`` (idle in every snapshot).
    """
    idle = tiles["pid"].isna() & (tiles["idle_pct"] >= IDLE_PCT)
    k = keys(tiles, "source")
    per_source = tiles.groupby(k, observed=True)["snapshot"].nunique().rename("snapshots")
    g = tiles[idle].groupby(keys(tiles, "source", "xrdu", "rdu", "tile"), sort=False,
                            observed=True)
    out = g["snapshot"].nunique().rename("idle_snapshots").reset_index()
    out["snapshots"] = out.join(per_source, on=k)["snapshots"].astype("int64")
    out["always_idle"] = out["idle_snapshots"] == out["snapshots"]
    return run_first(out, tiles)


def overview(tiles: pd.DataFrame) -> pd.DataFrame:
    """One row per source: tiles, snapshots, instances, idle tiles, mean shares of the states.

    Columns: ``source``, ``snapshots``, ``tiles``, ``instances``, ``busy_tiles`` (owned by
    a PID in the last snapshot), ``idle_tiles`` (idle in every snapshot), ``exec_mean_pct``,
    ``pload_mean_pct``, ``aload_mean_pct``, ``chkpt_mean_pct`` and ``load_overhead_pct``
    (pload + aload + chkpt), means over the busy tile-snapshots.
    """
    rows = []
    idle = idle_tiles(tiles)
    k = keys(tiles, "source")
    for key, t in tiles.groupby(k, sort=False, observed=True):
        named = dict(zip(k, key, strict=True))
        mine = idle
        for c, v in named.items():
            mine = mine[mine[c] == v]
        last = t[t["snapshot"] == t["snapshot"].max()]
        busy = t[t["pid"].notna()]
        shares = {c: busy[c].mean() if len(busy) else float("nan") for c in
                  ("exec_pct", "pload_pct", "aload_pct", "chkpt_pct")}
        rows.append({
            **named, "snapshots": t["snapshot"].nunique(),
            "tiles": _tile_key(t).nunique(), "instances": busy["pid"].nunique(),
            "busy_tiles": int(last["pid"].notna().sum()),
            "idle_tiles": int(mine["always_idle"].sum()),
            **{c.replace("_pct", "_mean_pct"): v for c, v in shares.items()},
            "load_overhead_pct": shares["pload_pct"] + shares["aload_pct"] + shares["chkpt_pct"],
        })
    return run_first(pd.DataFrame(rows), tiles)


def exec_series(tiles: pd.DataFrame) -> pd.DataFrame:
    """Mean %exec per instance and snapshot, for captures with several snapshots.

    Columns: ``source``, ``snapshot``, ``time``, ``pid``, ``exec_mean_pct``, ``tiles``.
    """
    busy = tiles[tiles["pid"].notna()]
    g = busy.groupby(keys(busy, "source", "snapshot", "pid"), sort=True, observed=True)
    return run_first(pd.DataFrame({
        "time": g["time"].first(), "exec_mean_pct": g["exec_pct"].mean(),
        "tiles": g["tile"].size(),
    }).reset_index(), tiles)


def _tile_key(t: pd.DataFrame) -> pd.Series:
    return _num(t["xrdu"]) + "/" + _num(t["rdu"]) + "/" + _num(t["tile"])


def _num(s: pd.Series) -> pd.Series:
    """A number column as text; a missing number (too large for its column) as '?'."""
    return s.astype("string").fillna("?").astype(object)


def tile_columns(tiles: pd.DataFrame) -> list[int]:
    """The tile numbers present in ``tiles`` (or in a ``grid``), ascending: the columns of a
    heatmap. A grid is sized by the tiles that exist, never by the largest number, so a
    listing naming ``TILE_20000000`` adds one column, not twenty million."""
    return sorted(int(t) for t in tiles["tile"].dropna().unique())


def instance_numbers(tiles: pd.DataFrame) -> dict[int, int]:
    """PID -> instance number (1, 2, ...) by first appearance in one source's ``tiles``."""
    return {int(p): i + 1 for i, p in enumerate(dict.fromkeys(tiles["pid"].dropna()))}


def grid(tiles: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, xrdu, rdu, tile): mean %exec over snapshots and its PID.

    Columns: ``source``, ``xrdu``, ``rdu``, ``tile``, ``exec_mean_pct``, ``idle_mean_pct``,
    ``pid`` (the PID of the last snapshot that had one), ``instance`` (1, 2, ... numbering
    the PIDs of the source in order of first appearance; null for idle tiles).
    """
    k = keys(tiles, "source")
    g = tiles.groupby([*k, "xrdu", "rdu", "tile"], sort=False, observed=True)
    out = pd.DataFrame({
        "exec_mean_pct": g["exec_pct"].mean(),
        "idle_mean_pct": g["idle_pct"].mean(),
        "pid": g["pid"].last(),
    }).reset_index()
    busy = tiles[tiles["pid"].notna()]
    numbers = {
        (*key, pid): n
        for key, t in busy.groupby(k, sort=False, observed=True)
        for pid, n in instance_numbers(t).items()
    }
    cols = [out[c].astype(object) for c in k] + [out["pid"]]
    out["instance"] = pd.array([numbers.get(key) for key in zip(*cols, strict=True)],
                               dtype="Int64")
    return run_first(out, tiles)
