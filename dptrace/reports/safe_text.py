"""Strings from inputs made safe to show: no control sequence reaches a terminal, no
bidirectional override or zero-width character makes a name display as another.

Every face that shows text to a person uses :func:`visible` (the terminal on every table
cell, the HTML on top of its escaping); JSON and exports keep the data as it was read
(JSON escapes control characters itself; CSV cells are guarded by :func:`csv_cell`).

What is replaced, and by what (so that a user still sees that something was there):

- C0 controls other than tab and newline, and DEL: the Unicode "control pictures"
  (ESC -> U+241B '␛', BEL -> U+2407 '␇', CR -> U+240D '␍', DEL -> U+2421 '␡');
- C1 controls (U+0080-U+009F, e.g. the one-byte CSI U+009B), bidirectional embeddings,
  overrides, isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C),
  zero-width and invisible formatting characters (U+200B-U+200D, U+2060-U+2064, U+FEFF,
  U+00AD): ``⟨U+XXXX⟩``.
"""

from __future__ import annotations

import re

import pandas as pd

_C0 = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)} | {0x7F: 0x2421}
_MARKED = [*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E,
           0x200F, 0x061C, *range(0x200B, 0x200E), *range(0x2060, 0x2065), 0xFEFF, 0x00AD]
_TABLE: dict[int, str | int] = {**_C0, **{c: f"\u27e8U+{c:04X}\u27e9" for c in _MARKED}}
_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_TABLE)) + "]")


def visible(text: str) -> str:
    """``text`` with every control, bidi and invisible character replaced by a visible mark."""
    if _UNSAFE.search(text) is None:   # the common case: nothing to do, no copy
        return text
    return text.translate(_TABLE)


def visible_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with :func:`visible` applied to every text cell (object, string and category
    columns); the same frame when no cell needs it."""
    out = df
    for col in df.columns:
        s = df[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            if cats.dtype == object or pd.api.types.is_string_dtype(cats.dtype):
                fixed = [visible(c) if isinstance(c, str) else c for c in cats]
                if fixed != list(cats) and len(set(fixed)) == len(fixed):
                    out = out if out is not df else df.copy()
                    out[col] = s.cat.rename_categories(fixed)
                elif fixed != list(cats):   # two names differ only by hidden characters
                    out = out if out is not df else df.copy()
                    out[col] = s.astype(object).map(
                        lambda v: visible(v) if isinstance(v, str) else v)
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            if _UNSAFE.search("\n".join(_texts(s))) is None:   # one search for the column
                continue
            out = out if out is not df else df.copy()
            out[col] = s.map(lambda v: visible(v) if isinstance(v, str) else v,
                             na_action="ignore")
    return _visible_labels(out, df)


#: a column this long is deduplicated by pandas (below it, by a Python set: ~10x faster on
#: a report's small tables, where pandas' fixed cost per call dominates)
_SET_ROWS = 10_000


def _texts(s: pd.Series) -> list[str]:
    """The distinct strings of column ``s``."""
    if len(s) <= _SET_ROWS:
        try:
            return [v for v in set(s.tolist()) if isinstance(v, str)]
        except TypeError:   # an unhashable cell (a list): pandas' way below
            pass
    return [v for v in s.dropna().unique() if isinstance(v, str)]


def _visible_labels(out: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """Column labels made visible too: pivot tables name their columns after runs, whose
    names come from directories and labels the user gave (``ESC]0;...BEL`` in a run's
    folder name must not reach a terminal or a page's ``<th>`` raw)."""
    labels = [str(c) if not isinstance(c, tuple) else " ".join(map(str, c)) for c in out.columns]
    if _UNSAFE.search("\n".join(labels)) is None:
        return out
    fixed = [visible(c) if isinstance(c, str) else
             tuple(visible(x) if isinstance(x, str) else x for x in c) if isinstance(c, tuple)
             else c for c in out.columns]
    out = out if out is not df else df.copy()
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = pd.MultiIndex.from_tuples(fixed, names=out.columns.names)
    else:
        out.columns = pd.Index(fixed, name=out.columns.name)
    return out


#: characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'`` (the usual
    guidance); numbers and other values unchanged. ``-3.5`` stays a number only when it is
    one: text that starts with ``-`` and parses as a number is left alone."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        if value[0] in "+-":
            try:
                float(value)
                return value
            except ValueError:
                pass
        return "'" + value
    return value
