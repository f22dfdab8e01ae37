"""The toy format's table."""

from __future__ import annotations

from dptrace.schema import LINENO, SOURCE, Column, Table, register_table

TOY_RANKS = register_table(Table(
    "toy_ranks", "toy profiles: one row per rank",
    (SOURCE, Column("rank", "Int64", "the rank"),
     Column("busy_s", "float64", "seconds busy", "s"),
     Column("wait_s", "float64", "seconds waiting for the others", "s"),
     LINENO),
    key=("source", "rank")), place=200)
