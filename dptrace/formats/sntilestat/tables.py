"""The sntilestat format's table: ``tiles``."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table

_c = Column

_PCT = "share of the sampling interval the tile spent"
TILES = register_table(Table(
    "tiles",
    "SambaNova sntilestat: one row per tile per snapshot (a capture of `watch sntilestat` "
    "holds many snapshots).",
    (
        SOURCE,
        _c("snapshot", "Int64", "0, 1, ... in order within the source"),
        _c("time", "datetime64[ns]", "when the snapshot was taken, from a `watch` header; "
           "else null"),
        _c("host", "string", "host named by a `watch` header; else null"),
        _c("xrdu", "Int64", "XRDU number from /XRDU_x/RDU_y/TILE_z"),
        _c("rdu", "Int64", "RDU number within the XRDU"),
        _c("tile", "Int64", "tile number within the RDU (SN10: 0-3, SN30: 0-7)"),
        _c("idle_pct", "float64", f"{_PCT} idle", "%"),
        _c("exec_pct", "float64", f"{_PCT} executing", "%"),
        _c("pload_pct", "float64", f"{_PCT} loading a program", "%"),
        _c("aload_pct", "float64", f"{_PCT} loading arguments", "%"),
        _c("chkpt_pct", "float64", f"{_PCT} checkpointing", "%"),
        _c("quiesce_pct", "float64", f"{_PCT} quiescing", "%"),
        _c("pid", "Int64", "process owning the tile; null for an idle tile"),
        _c("user", "string", "owner of the process; null for an idle tile"),
        _c("command", "string", "command, as sntilestat cut it (fixed width) or as wrapped in "
           "copies, joined"),
        LINENO,
    ),
    key=("source", "snapshot", "xrdu", "rdu", "tile"),
), place=10)
