"""Every number, size, rate, time and share format of the report, for every face.

Tables never hold formatted strings (see the design notes); the faces format at the last
moment, and all of them take their formats from here, so a size reads the same in the
terminal, the HTML tables and a figure's axis. This module imports neither rich nor plotly.

Missing values (None, ``pd.NA``, NaN) read ``-`` (``""`` in the HTML tables and in text
cells); an infinite number (a sum that overflowed, a log line printing ``1e999``) reads
``inf``; numbers beyond :data:`PLAIN_LIMIT` take an exponent, since a 300-digit figure helps
nobody.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

#: above this a number is shown with an exponent
PLAIN_LIMIT = 1e15


def missing(v: object) -> bool:
    """None, pd.NA, NaN (a float or a numpy float): shown as '-'."""
    if v is None or v is pd.NA:
        return True
    try:
        return bool(v != v)   # NaN is the one value not equal to itself
    except (TypeError, ValueError):
        return False


def _infinite(v: object) -> str | None:
    """'inf' or '-inf' for an infinite number, else None."""
    if isinstance(v, float | np.floating) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def text(value: object) -> str:
    """A text cell (a user, a command, a format name): empty when missing (a row with a PID
    but no USER has NA there, and ``NA or ""`` raises)."""
    return "" if value is None or value is pd.NA or (isinstance(value, float) and
                                                      math.isnan(value)) else str(value)


# -- sizes, rates, times ---------------------------------------------------------------------

def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as mpitrace's bins are powers of two); up to EiB, and
    beyond in EiB with an exponent (1e308 -> '8.67e+289 EiB'). Missing: '-'; infinite: 'inf'."""
    if missing(n):
        return "-"
    inf = _infinite(n)
    if inf:
        return inf
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            if abs(n) >= 1024:
                return f"{n:.3g} {unit}"
            return f"{n:.0f} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def bin_label(bin_: int, hi: int) -> str:
    """'0 B', '1-4 B', '5-8 B' ... '2-4 MiB': the range of sizes a power-of-two bin holds."""
    if bin_ == 0:
        return "0 B"
    if bin_ == 1:
        return "1-4 B"
    lo_s, hi_s = human_bytes(hi // 2).split(), human_bytes(hi).split()
    if lo_s[1] == hi_s[1]:
        return f"{lo_s[0]}-{hi_s[0]} {hi_s[1]}"
    return f"{' '.join(lo_s)}-{' '.join(hi_s)}"


def human_rate(bps: float) -> str:
    """Bytes per second in decimal units (nccl-tests convention): '6.62 GB/s'. Missing: '-';
    infinite: 'inf'."""
    if missing(bps):
        return "-"
    inf = _infinite(bps)
    if inf:
        return inf
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.3g} B/s"


def human_time(us: Any) -> str:
    """Microseconds for humans: '143.11 s', '12.3 ms', '45 µs'. Missing: '-'."""
    if missing(us):
        return "-"
    us = float(us)
    if abs(us) >= 1e6:
        return f"{us / 1e6:,.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.1f} ms"
    return f"{us:.0f} µs"


# -- numbers and shares ----------------------------------------------------------------------

def fmt(value: object, digits: int = 2) -> str:
    """A number for humans (the terminal's general format): thousands separators; small
    values keep 3 significant digits; huge ones take an exponent, and infinities are
    ``inf``. Anything else is ``str(value)``; missing ``-``."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) >= PLAIN_LIMIT:
        return f"{value:.3g}" if digits < 3 else f"{value:.{digits + 1}g}"
    if value != 0 and abs(value) < 1:
        return f"{value:.3g}"
    return f"{value:,.{digits + 1 if abs(value) < 10 else digits}f}"


def num(v: object, digits: int = 3) -> str:
    """A number with thousands separators and ``digits`` decimals ('1,234.500'); whole
    numbers as they are; missing '-', infinite 'inf'."""
    if missing(v):
        return "-"
    inf = _infinite(v)
    if inf:
        return inf
    if isinstance(v, float | np.floating):
        return f"{v:,.{digits}f}" if abs(v) < PLAIN_LIMIT else f"{v:.3g}"
    return f"{v:,}" if isinstance(v, int | np.integer) else str(v)


def count(v: object) -> str:
    """A whole number with thousands separators ('97,896'); missing '-'."""
    if missing(v):
        return "-"
    return f"{int(v):,}"  # type: ignore[call-overload]


def pct(v: object) -> str:
    """A share (a fraction of a whole) as a percentage: 0.123 -> '12.3%'; missing '-',
    infinite 'inf'."""
    if missing(v):
        return "-"
    inf = _infinite(v)
    if inf:
        return inf
    share = 100 * float(v)  # type: ignore[arg-type]
    if math.isinf(share):   # a share near the float limit: 100 x overflows
        return "inf" if share > 0 else "-inf"
    return f"{share:.1f}%" if abs(share) < PLAIN_LIMIT else f"{share:.3g}%"


def percent(value: object) -> str:
    """A value already in percent (``exec_mean_pct``) as ``91.6%``; ``-`` when missing or
    not a number (a cut %quiesce, a NaN mean)."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return f"{v:.1f}%" if v == v else "-"


def vs_median(below_pct: object) -> str:
    """How far a value is from the median, from its ``below_median_pct``: '-5.2%', '+1.0%'."""
    if not isinstance(below_pct, (int, float)) or not math.isfinite(below_pct):
        return "-"
    if abs(below_pct) >= 1e6:  # a median near 0 beside a huge value: a ratio, not a share
        return f"{-below_pct:+.3g}%"
    return f"{-below_pct:+.1f}%" if abs(below_pct) >= 0.05 else "0.0%"


def span(lo: object, hi: object) -> str:
    """A range of whole numbers: '3' when both ends agree, else '2-5'."""
    lo_i, hi_i = int(lo), int(hi)  # type: ignore[call-overload]
    return str(lo_i) if lo_i == hi_i else f"{lo_i}-{hi_i}"


# -- figures and HTML tables -----------------------------------------------------------------

def plot_num(value: object, digits: int = 2) -> str:
    """A number in a figure's annotation: '5,278.34'; '-' when missing or not finite (a
    figure has no room for 'inf'); '1.2e+300' beyond :data:`PLAIN_LIMIT`."""
    if value is None or value is pd.NA:
        return "-"
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v):
        return "-"
    return f"{v:,.{digits}f}" if abs(v) < PLAIN_LIMIT else f"{v:.3g}"


def table_float(v: float) -> str:
    """A float in an HTML table: 6 significant digits, whole from a million up; empty when
    missing."""
    if math.isnan(v):
        return ""
    return f"{v:,.0f}" if abs(v) >= 1e6 else f"{v:,.6g}"


def table_share(v: float) -> str:
    """A share in an HTML table (0.9967 -> '99.7 %'); empty when missing."""
    if v is None or pd.isna(v):
        return ""
    return f"{100 * float(v):.3g} %"


def is_share(column: str) -> bool:
    """Columns holding a fraction of a whole (``time_share``, ``comm_share_mean``, ...): the
    faces show them as percentages."""
    return column == "share" or column.endswith("_share") or "_share_" in column
