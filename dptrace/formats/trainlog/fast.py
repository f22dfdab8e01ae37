"""The trainlog format's fast engine: lines of tqdm updates read in C, rows kept as columns.

A physical line made only of ``\\r``-separated tqdm updates, which dominate large logs, is
read by a small C extension (``_tqdm_fast.c``, built by ``pip install`` when a compiler is
there): it adds exactly the rows of the general engine's :func:`.general._tqdm_updates`, or
adds nothing and declines the line, which the general engine then reads. :data:`_FAST` is
its entry point (None: not built, or ``DPTRACE_PURE_PYTHON`` set); ``engine="fast"`` and
``"auto"`` hand it to the scanner, ``"general"`` does not. With google-re2 the scanner's loop
runs in the extension as well (``_tqdm_fast.scan``, registered in :data:`.general.C_SCANS`):
it reads the lines it is sure of (tqdm lines, SambaFlow and loss lines of plain ASCII: exactly
the rows of :func:`.general._recognise`) and returns any other keyword to the Python loop.

The fast engine also keeps its rows in the extension's Tables (:func:`new_rows`): one
array per column, strings as codes into their distinct values, instead of a tuple of Python
objects per row (a dense log has millions of rows). :func:`frame` makes the very frame
``pd.DataFrame.from_records`` makes of the general engine's lists of tuples, from whole
columns.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from . import general, rules
from .general import CrLine


def _load_fast() -> CrLine | None:
    """The fast path of :meth:`.general._Scanner._cr_line` in C (``_tqdm_fast.c``), or None.

    ``cr_line(raw, whole_start, line, start, rows)`` decodes the line, finds its launcher
    prefix and adds the very rows :func:`.general._tqdm_updates` adds, or adds nothing and returns
    False when unsure (or for bytes that are not UTF-8, ANSI escapes, ``<std`` tags); the
    Python code then reads the line. None when the extension was not built (no compiler at
    install) or when the environment sets ``DPTRACE_PURE_PYTHON`` (to anything but ``0`` or
    nothing), read at import.
    """
    if os.environ.get("DPTRACE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _tqdm_fast  # type: ignore[attr-defined]
    except ImportError:
        return None
    configure_fast(_tqdm_fast)
    fast: CrLine = _tqdm_fast.cr_line
    return fast


def configure_fast(module: Any) -> None:
    """Hand the C module the caches and the Python helpers it calls on cache misses, for
    ``1.5k`` counts, postfix keys, non-ASCII postfixes and an unmatched first segment."""
    module.configure(general._PRE, general._pre_info, general._UNIT, rules.rate_unit,
                     rules._tqdm_count, rules.postfix_pairs, general._SCAN_TEXT.search,
                     rules._snake)
    match, guards = general.re2_match(), general.c_plain_guards()
    if match is not None and guards is not None and hasattr(module, "scan"):  # needs RE2
        module.configure_scan(*match, general.WINDOW, general.MAX_SEGMENT, *guards)
        if hasattr(module, "configure_literals"):
            module.configure_literals(general.scan_literals())
        if hasattr(module, "configure_required"):
            module.configure_required(general.required_literals())
        general.C_SCANS[module.cr_line] = (module.scan, rules.SPECIFIC, rules.FALLBACK)


_FAST = _load_fast()
_TABLES: Any = None if _FAST is None else __import__(
    "dptrace.formats.trainlog._tqdm_fast", fromlist=["Table"]).Table

#: the kind of each column in a Table (see _tqdm_fast.c): 'c' a string or None, 'i' an int,
#: 'd' a float, 's' an int or None, 'e' a float or None
KINDS = {"prefix": "c", "lineno": "i", "seg": "i", "pattern": "c", "name": "c", "metric": "c",
         "value": "d", "scope": "c", "step": "s", "epoch": "e", "label": "c"}


def new_rows() -> rules.Rows | None:
    """A row collector whose tables are the extension's columnar Tables, or None when the
    extension is not there (the caller then collects lists of tuples)."""
    if _TABLES is None:
        return None
    return rules.Rows(tp=_TABLES("".join(KINDS[c] for c in rules.TP_COLS)),
                      tm=_TABLES("".join(KINDS[c] for c in rules.TM_COLS)))


def frame(found: Any, columns: tuple[str, ...]) -> pd.DataFrame:
    """The rows collected in ``found`` (a list of tuples, or a Table, which this empties) as
    a frame with ``columns``. From a list: ``pd.DataFrame.from_records``. From a Table: the
    same values and, for numbers, the same dtypes (ints, or floats with NaN where a step is
    missing; object columns of None when all are), with strings as categoricals (the codes
    the Table kept; categories in order of appearance): a few distinct strings repeat
    millions of times, and the frames are pickled back from the scan workers."""
    if isinstance(found, list) or not len(found):
        rows = found if isinstance(found, list) else []
        try:
            return pd.DataFrame.from_records(rows, columns=list(columns))
        except OverflowError:   # pandas 2: a column of floats and an int past a float's
            # range (a tqdm bar counting 400 digits) is not inferred: kept as objects, as
            # pandas 3 keeps it, for the reader's checks to make missing with a problem
            cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
            return pd.DataFrame({name: pd.Series(list(col), dtype=object)
                                 for name, col in zip(columns, cols, strict=True)})
    n = len(found)
    data = {name: _column(name, n, *col) for name, col in zip(columns, found.take(),
                                                              strict=True)}
    return pd.DataFrame(data, copy=False)


def _column(name: str, n: int, kind: str, data: Any, nulls: Any, values: Any) -> Any:
    """One column of ``Table.take()``."""
    if kind == "o":  # a value did not fit the column's kind: as pandas converts the objects
        try:
            return pd.DataFrame.from_records([(v,) for v in data], columns=[name])[name].array
        except OverflowError:   # pandas 2: floats and an int past a float's range (see frame)
            return pd.Series(list(data), dtype=object).array
    if kind == "c":
        if not values:
            return np.full(n, None, dtype=object)
        codes = np.frombuffer(data, np.int32)
        return pd.Categorical.from_codes(codes, categories=pd.Index(values))
    if kind in ("i", "s"):
        ints = np.frombuffer(data, np.int64)
        if nulls is None:
            return ints
        missing = np.frombuffer(nulls, np.bool_)
        if not missing.any():
            return ints
        if missing.all():
            return np.full(n, None, dtype=object)
        out = ints.astype(np.float64)  # ints and None: floats, as from_records
        out[missing] = np.nan
        return out
    floats = np.frombuffer(data, np.float64)  # 'd', 'e' (NaN where None)
    if nulls is not None and np.frombuffer(nulls, np.bool_).all():
        return np.full(n, None, dtype=object)
    return floats
