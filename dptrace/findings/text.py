"""Plain-text pieces of findings' sentences (findings never import reports): numbers,
shares, times, line ranges, rank lists and message-size bins, the same in every rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def na(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def integer(v: Any) -> str:
    return "?" if na(v) else f"{int(v):,}"


def num(v: Any) -> str:
    """A measure for a sentence: 1,234 / 12.35 / 0.0123."""
    if na(v):
        return "?"
    x = float(v)
    if not np.isfinite(x):
        return str(x)
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def pct(share: float) -> str:
    return f"{100 * share:g}%"


def lines(first: Any, last: Any) -> str:
    """'line 2' or 'lines 10-250' (a tqdm bar's updates share one physical line)."""
    return f"line {integer(first)}" if integer(first) == integer(last) else \
        f"lines {integer(first)}-{integer(last)}"


def pct1(share: float) -> str:
    """A measured share, to one decimal: 0.857 -> '85.7%'."""
    return f"{100 * share:.1f}%"


def time_us(us: Any) -> str:
    """Microseconds for a sentence: '1.23 s', '12.3 ms', '45 µs'."""
    if na(us):
        return "?"
    x = float(us)
    if abs(x) >= 1e6:
        return f"{x / 1e6:,.2f} s"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.1f} ms"
    return f"{x:.0f} µs"


def unit(metric: Any) -> str:
    """'samples_per_s' -> 'samples/s'."""
    m = "" if na(metric) else str(metric)
    return m[: -len("_per_s")] + "/s" if m.endswith("_per_s") else m


def rank_list(df: pd.DataFrame, limit: int = 8) -> str:
    """'1, 2, 3' (the first ``limit`` ranks, then '...'), as ``communication.checks`` lists them."""
    r = [str(x) for x in df["rank"].tolist()]
    return ", ".join(r[:limit]) + (", ..." if len(r) > limit else "")


def count(v: Any) -> int:
    """A count from a table cell; a missing count is 0 (nothing to report)."""
    return 0 if na(v) else int(v)


def flag(v: Any) -> bool:
    return False if na(v) else bool(v)


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def bytes_range(lo: int | None, hi: int | None) -> str:
    if lo is None or hi is None:
        return ""
    return f" of {hi:,} bytes" if lo == hi else f" of {lo:,}-{hi:,} bytes"


def bin_bytes(r: pd.Series) -> str:
    """' of 2,097,153-4,194,304 bytes' (a message-size bin)."""
    lo, hi = r["bin_lo_bytes"], r["bin_hi_bytes"]
    return "" if na(lo) or na(hi) else bytes_range(int(lo), int(hi))
