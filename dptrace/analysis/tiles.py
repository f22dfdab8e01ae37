"""SambaNova tile utilisation: instances (tiles grouped by PID), idle tiles, overheads.

All functions take the ``tiles`` table. A data-parallel SambaFlow job runs one process per
instance; each instance owns the tiles that sntilestat lists with its PID.
"""

from __future__ import annotations

import pandas as pd

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
        return pd.DataFrame(columns=["source", "pid", "user", "command", "tiles", "rdus",
                                     "rdu_list", "snapshots", "exec_mean_pct", "exec_min_pct",
                                     "pload_mean_pct", "aload_mean_pct", "chkpt_mean_pct",
                                     "lowest"])
    busy = busy.assign(_tile=_tile_key(busy), _rdu=_num(busy["xrdu"]) + "/" + _num(busy["rdu"]))
    g = busy.groupby(["source", "pid"], sort=False)
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
    low = out.groupby("source")["exec_mean_pct"].transform("min")
    out["lowest"] = out["exec_mean_pct"] == low
    return out


def idle_tiles(tiles: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, tile) that was idle in at least one snapshot.

    Columns: ``source``, ``xrdu``, ``rdu``, ``tile``, ``idle_snapshots``, ``snapshots``
    (in the source), ``always_idle`` (idle in every snapshot).
    """
    idle = tiles["pid"].isna() & (tiles["idle_pct"] >= IDLE_PCT)
    per_source = tiles.groupby("source")["snapshot"].nunique()
    g = tiles[idle].groupby(["source", "xrdu", "rdu", "tile"], sort=False)
    out = g["snapshot"].nunique().rename("idle_snapshots").reset_index()
    out["snapshots"] = out["source"].map(per_source).astype("int64")
    out["always_idle"] = out["idle_snapshots"] == out["snapshots"]
    return out


def overview(tiles: pd.DataFrame) -> pd.DataFrame:
    """One row per source: tiles, snapshots, instances, idle tiles, mean shares of the states.

    Columns: ``source``, ``snapshots``, ``tiles``, ``instances``, ``busy_tiles`` (owned by
    a PID in the last snapshot), ``idle_tiles`` (idle in every snapshot), ``exec_mean_pct``,
    ``pload_mean_pct``, ``aload_mean_pct``, ``chkpt_mean_pct`` and ``load_overhead_pct``
    (pload + aload + chkpt), means over the busy tile-snapshots.
    """
    rows = []
    idle = idle_tiles(tiles)
    for source, t in tiles.groupby("source", sort=False):
        last = t[t["snapshot"] == t["snapshot"].max()]
        busy = t[t["pid"].notna()]
        shares = {c: busy[c].mean() if len(busy) else float("nan") for c in
                  ("exec_pct", "pload_pct", "aload_pct", "chkpt_pct")}
        rows.append({
            "source": source, "snapshots": t["snapshot"].nunique(),
            "tiles": _tile_key(t).nunique(), "instances": busy["pid"].nunique(),
            "busy_tiles": int(last["pid"].notna().sum()),
            "idle_tiles": int(idle.loc[idle["source"] == source, "always_idle"].sum()),
            **{c.replace("_pct", "_mean_pct"): v for c, v in shares.items()},
            "load_overhead_pct": shares["pload_pct"] + shares["aload_pct"] + shares["chkpt_pct"],
        })
    return pd.DataFrame(rows)


def exec_series(tiles: pd.DataFrame) -> pd.DataFrame:
    """Mean %exec per instance and snapshot, for captures with several snapshots.

    Columns: ``source``, ``snapshot``, ``time``, ``pid``, ``exec_mean_pct``, ``tiles``.
    """
    busy = tiles[tiles["pid"].notna()]
    g = busy.groupby(["source", "snapshot", "pid"], sort=True)
    return pd.DataFrame({
        "time": g["time"].first(), "exec_mean_pct": g["exec_pct"].mean(),
        "tiles": g["tile"].size(),
    }).reset_index()


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
    keys = ["source", "xrdu", "rdu", "tile"]
    g = tiles.groupby(keys, sort=False)
    out = pd.DataFrame({
        "exec_mean_pct": g["exec_pct"].mean(),
        "idle_mean_pct": g["idle_pct"].mean(),
        "pid": g["pid"].last(),
    }).reset_index()
    numbers = {
        (src, pid): n
        for src, t in tiles[tiles["pid"].notna()].groupby("source", sort=False)
        for pid, n in instance_numbers(t).items()
    }
    out["instance"] = pd.array([numbers.get((s, p)) for s, p in zip(out["source"], out["pid"],
                                                                      strict=True)],
                               dtype="Int64")
    return out
