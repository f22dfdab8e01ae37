"""The schema's pandas side: tables made to the schema (:func:`conform`), and the column
helpers the readers and analyses share (categoricals, lookups, codes, the text dtype).

:mod:`dptrace.schema` describes the tables without importing pandas (``dptrace schema``,
``dptrace formats`` and every format's ``tables`` module stay light); its names for what is
here (``schema.conform``, ``schema.STRING``, ...) import this module on first use.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .schema import Table


def conform(data: pd.DataFrame | Mapping[str, Any], table: Table) -> pd.DataFrame:
    """Return ``data`` as a DataFrame with ``table``'s columns, in order, with its dtypes.

    Missing columns are added as nulls; extra columns are kept after the schema's. A frame
    that is the table already (its columns in order, each of its dtype, index 0..n-1: a
    reader's conformed table, conformed again by the loader) comes back as a shallow copy,
    without a look at any column (a load of thousands of small files conformed each of
    them a column at a time). A column already of its dtype is taken as it is (its dtype
    read once, from the frame's dtypes).
    """
    if isinstance(data, pd.DataFrame) and _conformed(data, table):
        return data.copy(deep=False)
    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(dict(data), copy=False)
    n = len(df)
    unique = df.columns.is_unique
    have = dict(zip(df.columns.tolist(), df.dtypes.tolist(), strict=True)) if unique else {}
    plain = unique and _default_index(df)
    out: dict[str, Any] = {}
    for col in table.columns:
        name = col.name
        if name not in df:
            out[name] = _nulls(n, col.dtype)
        elif plain and _is_dtype(have[name], col.dtype):
            out[name] = df[name]
        else:
            out[name] = _as_dtype(df[name], col.dtype)
    extra = {k: df[k] for k in df.columns if k not in out}
    # no copy: the columns are new, or the caller's (copy-on-write shares them safely); a
    # copy made the peak memory of a large table three times its size. Every column on the
    # index 0..n-1 when ``df`` is: given as the index, pandas aligns none (a union of 15
    # indexes cost ~0.4 ms a table)
    if plain:
        return pd.DataFrame({**out, **extra}, index=pd.RangeIndex(n), copy=False)
    frame = pd.DataFrame({**out, **extra}, copy=False)
    return frame if _default_index(frame) else frame.reset_index(drop=True)


def _conformed(df: pd.DataFrame, table: Table) -> bool:
    """True when :func:`conform` would give ``df``'s columns as they are: the table's
    columns first, in order, each already of its dtype (a categorical's text categories in
    :func:`text_categories`' dtype), unique names, and the default index."""
    names = table.names
    columns = df.columns
    if len(columns) < len(names) or not columns.is_unique or not _default_index(df):
        return False
    if columns[:len(names)].tolist() != names:
        return False
    return all(_is_dtype(dtype, col.dtype)
               for dtype, col in zip(df.dtypes.tolist(), table.columns, strict=False))


def _is_dtype(dtype: Any, want: str) -> bool:
    """Whether a column of ``dtype`` is one of the schema's ``want`` as :func:`_as_dtype`
    leaves it."""
    if want == "string":
        return bool(dtype == STRING)
    if want == "category":
        if not isinstance(dtype, pd.CategoricalDtype):
            return False
        cats = dtype.categories.dtype
        return bool(cats == _TEXT_INDEX) or not pd.api.types.is_string_dtype(cats)
    return not isinstance(dtype, pd.CategoricalDtype) and str(dtype) == want


def from_rows(rows: list[dict[str, Any]], table: Table) -> pd.DataFrame:
    """A reader's rows (dicts keyed by column; ``run`` is the loader's) as ``table``,
    conformed; the empty table with its columns when there are none."""
    cols = [c for c in table.names if c != "run"]
    df = pd.DataFrame(rows, columns=cols) if rows else table.empty().drop(columns="run")
    return conform(df, table)


def _default_index(data: pd.DataFrame | pd.Series) -> bool:
    """True when the index is 0..n-1 already: pandas 2's ``reset_index`` copies every
    column (on millions of rows, a copy of the table at its largest)."""
    index = data.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts' rows in order. Parts with all-null columns are kept as they are; the
    schema sets each column's dtype afterwards (:func:`conform`), so pandas 2's
    FutureWarning about how such columns will count towards the result's dtype does not
    apply. Categorical columns stay categorical (:func:`unite_categories`): pandas makes
    objects of categoricals whose categories differ (two files' sources), a Python object
    per row that :func:`conform` would have to turn back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(unite_categories(parts), ignore_index=True)


def _is_categorical(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype)


def unite_categories(frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """``frames`` with one categorical dtype in each column that is categorical in every
    frame with rows (frames without rows may hold anything there: all-null objects), so
    that they concatenate into a categorical. Where the frames with rows agree, that dtype
    is kept (its categories keep their order: ``phase``'s is meaningful); otherwise the
    categories become the sorted union (what ``astype("category")`` gives the
    concatenated values). The codes are recoded, no value becomes an object."""
    full = [df for df in frames if len(df)]
    if len(frames) < 2 or not full:
        return frames
    if not all(df.columns.is_unique for df in frames):
        return _unite_by_columns(frames, full)
    # each frame's dtypes read once (a column looked up is ~15 us on pandas 3; this looked
    # up every column of every frame three times, ~50 ms for ten parts of a small load)
    types = [dict(zip(df.columns.tolist(), df.dtypes.tolist(), strict=True)) for df in frames]
    full_types = [t for t, df in zip(types, frames, strict=True) if len(df)]
    cols = [c for c in full[0].columns
            if all(isinstance(t.get(c), pd.CategoricalDtype) for t in full_types)
            and all(c in t for t in types)]
    out = None
    for col in cols:
        dtype = full_types[0][col]
        if all(t[col] == dtype for t in types):
            continue
        if not all(t[col] == dtype for t in full_types):
            dtype = pd.CategoricalDtype(union_categories(
                [t[col].categories for t in full_types]))
        if out is None:
            out = [df.copy(deep=False) for df in frames]
        for df, t in zip(out, types, strict=True):
            have = t[col]
            if have == dtype:
                continue
            df[col] = (_recoded(df[col], have, dtype) if isinstance(have, pd.CategoricalDtype)
                       else df[col].astype(dtype))
    return frames if out is None else out


def _recoded(s: pd.Series, have: pd.CategoricalDtype, dtype: pd.CategoricalDtype,
             ) -> pd.Series:
    """``s.cat.set_categories(dtype.categories)`` (its own ``ordered`` kept) by one lookup of
    its codes: a value not among them becomes null."""
    if have.ordered != dtype.ordered:
        dtype = pd.CategoricalDtype(dtype.categories, ordered=have.ordered)
    at = {v: i for i, v in enumerate(dtype.categories.tolist())}
    table = np.array([at.get(v, -1) for v in have.categories.tolist()] + [-1], dtype=np.int64)
    codes = table[s.cat.codes.to_numpy()]   # -1 (null): the last entry, -1
    return pd.Series(pd.Categorical.from_codes(codes, dtype=dtype, validate=False),
                     index=s.index, name=s.name, copy=False)


def _unite_by_columns(frames: list[pd.DataFrame], full: list[pd.DataFrame],
                      ) -> list[pd.DataFrame]:
    """:func:`unite_categories` of frames some of which repeat a column name."""
    cols = [c for c in full[0].columns
            if all(c in df.columns and _is_categorical(df[c]) for df in full)
            and all(c in df.columns for df in frames)]
    out = None
    for col in cols:
        if all(df[col].dtype == full[0][col].dtype for df in frames):
            continue
        dtype = full[0][col].dtype
        if not all(df[col].dtype == dtype for df in full):
            dtype = pd.CategoricalDtype(union_categories(
                [df[col].cat.categories for df in full]))
        if out is None:
            out = [df.copy(deep=False) for df in frames]
        for df in out:
            if df[col].dtype == dtype:
                continue
            df[col] = (df[col].cat.set_categories(dtype.categories) if _is_categorical(df[col])
                       else df[col].astype(dtype))
    return frames if out is None else out


def union_categories(categories: Sequence[pd.Index]) -> pd.Index:
    """The sorted union of several categoricals' categories (in order of appearance when
    they are of kinds that do not sort together): what ``astype("category")`` gives their
    concatenated values."""
    values = list(dict.fromkeys(v for c in categories for v in c.tolist()))
    with contextlib.suppress(TypeError):   # mixed kinds: in order of appearance
        values = sorted(values)
    return text_categories(values) if all(isinstance(v, str) for v in values) \
        else pd.Index(values)


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of each code 0..k-1 of ``codes`` (every code present)."""
    at = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=np.int64)
    at[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return at


def factorize(s: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """(codes, values) of a column, -1 for null: a categorical's own codes and categories
    (unused ones too: a lookup table of the values is indexed by the codes), else
    ``pd.factorize``'s (a hash of every row)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy(), s.cat.categories
    codes, values = pd.factorize(s, use_na_sentinel=True)
    return codes, pd.Index(values)


def lookup(table: np.ndarray, codes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``table[codes]`` for small-integer ``codes`` (a categorical's, -1 the last entry of
    ``table``), into ``out`` when given, a chunk at a time (:func:`lookup_chunks`)."""
    if out is None:
        out = np.empty(len(codes), dtype=table.dtype)
    for _ in lookup_chunks(table, codes, out):
        pass
    return out


def lookup_chunks(table: np.ndarray, codes: np.ndarray, out: np.ndarray | None = None,
                  ) -> Iterator[tuple[int, np.ndarray]]:
    """``(lo, table[codes[lo:lo + m]])`` a chunk of :data:`_LOOKUP_CHUNK` codes at a time:
    written into ``out[lo:lo + m]`` when ``out`` is given, else into one buffer reused for
    every chunk (use each before taking the next). ``take`` is 3x faster than indexing with
    8-bit codes, but wants 64-bit indices (a whole column's cast would be 8 bytes a row of
    memory at a load's peak): each chunk's are cast into one buffer, and ``mode="wrap"``
    writes straight to the destination (take's default mode copies each chunk through a new
    temporary). No allocation per chunk, whose fresh pages cost as much as the lookup."""
    n = len(codes)
    index = np.empty(min(n, _LOOKUP_CHUNK), dtype=np.intp)
    reuse = out is None
    into = np.empty(len(index), dtype=table.dtype) if out is None else out
    for lo in range(0, n, _LOOKUP_CHUNK):
        m = min(_LOOKUP_CHUNK, n - lo)
        index[:m] = codes[lo:lo + m]
        at = 0 if reuse else lo
        dest = into[at:at + m]
        table.take(index[:m], out=dest, mode="wrap")  # -1: the last, as 'raise' takes it
        yield lo, dest


#: codes looked up at once by :func:`lookup` (its 64-bit copy of them: 512 KB)
_LOOKUP_CHUNK = 1 << 16


def code_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """The rows of each code 0..k-1 of a categorical's ``codes`` (-1, null, not counted).
    One code in every row (a table's ``source`` or ``run`` column of one log) is counted by
    its least and greatest code alone: ``bincount`` makes a 64-bit copy of the codes (24 MB
    for 3 M rows, fresh pages each time)."""
    if len(codes) and codes.dtype.kind in "iu":
        lo = int(codes.min())
        if lo == int(codes.max()):
            out = np.zeros(k, dtype=np.intp)
            if 0 <= lo < k:
                out[lo] = len(codes)
            return out
    if codes.dtype.kind == "i" and codes.dtype.itemsize <= 2:   # -1 in the top bin
        return np.bincount(codes.view(f"u{codes.dtype.itemsize}"), minlength=k)[:k]
    return np.bincount(codes[codes >= 0], minlength=k)[:k]


def isin(s: pd.Series, values: Any) -> np.ndarray:
    """``s.isin(values)`` as a bool array; a categorical's by its categories (one lookup of
    each row's code; none at all when no category is among ``values``)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        hit = s.cat.categories.isin(list(values))
        if not hit.any():
            return np.zeros(len(s), dtype=bool)
        return lookup(np.append(hit, False), s.cat.codes.to_numpy())   # -1: the False
    return s.isin(values).to_numpy(dtype=bool)


def combined_codes(columns: Sequence[pd.Series]) -> np.ndarray:
    """One int64 code per row for the combination of ``columns`` (nulls are a value): each
    column's codes (a categorical's own, else ``factorize``) mixed into one number, in
    place (one array of the rows' length at a time)."""
    out: np.ndarray | None = None
    for col in columns:
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            n = len(col.cat.categories) + 1
        else:
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            n = len(uniques) + 1
        if out is None:
            out = codes.astype(np.int64)
        else:
            out *= n
            out += codes
        out += 1  # null (-1) is 0
        if out.max(initial=0) > (1 << 40):  # re-number before the product could overflow
            out = pd.factorize(out)[0].astype(np.int64)
    return np.zeros(0, dtype=np.int64) if out is None else out


def text_categories(values: Any) -> pd.Index:
    """Categories of text in the dtype pandas gives text categories by default (object on
    pandas 2, ``str`` on pandas 3), whatever they arrived as (Arrow strings, objects): so
    that the categoricals of two files or two routes compare equal and concatenate."""
    return pd.Index(list(values), dtype=_TEXT_INDEX)


#: the dtype of an Index of Python strings on this pandas
_TEXT_INDEX = pd.Index(["x"]).dtype


#: the one text dtype: Arrow-backed on every pandas (pandas 2 would keep whichever storage a
#: column arrived with, so the same table could come out in two dtypes by route)
STRING = pd.StringDtype("pyarrow")


def _as_dtype(values: Any, dtype: str) -> pd.Series:
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if not _default_index(s):
        s = s.reset_index(drop=True)
    if dtype == "string":
        if isinstance(s.dtype, pd.CategoricalDtype):
            return _categorical_strings(s)
        return s if s.dtype == STRING else s.astype(STRING)
    if dtype == "category":
        return _as_category(s)
    if str(s.dtype) == dtype:
        return s
    if dtype.startswith("datetime64"):
        return pd.to_datetime(s, errors="coerce").astype(dtype)
    if dtype in ("float64", "Int64") and _all_none(s):   # nulls, as to_numeric makes them
        return _nulls(len(s), dtype).set_axis(s.index).rename(s.name)
    if dtype == "float64":
        return pd.to_numeric(s, errors="coerce").astype("float64")
    if dtype == "Int64":
        if isinstance(s.dtype, np.dtype) and s.dtype == np.int64:
            # the values as they are, with a mask (astype copies them)
            return pd.Series(pd.arrays.IntegerArray(s.to_numpy(), np.zeros(len(s), dtype=bool)),
                             index=s.index, name=s.name, copy=False)
        if pd.api.types.is_integer_dtype(s.dtype):
            return s.astype("Int64")
        if isinstance(s.dtype, np.dtype) and s.dtype == np.float64:
            return _whole_floats(s)
        return pd.to_numeric(s, errors="coerce").astype("Int64")
    return s.astype(dtype)


def _nulls(n: int, dtype: str) -> pd.Series:
    """A column of ``n`` nulls of ``dtype``, made as that dtype (a list of ``n`` Nones
    converted took several times the column's size)."""
    if dtype == "Int64":
        return pd.Series(pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64),
                                                np.ones(n, dtype=bool)), copy=False)
    if dtype == "float64":
        return pd.Series(np.full(n, np.nan), copy=False)
    if dtype == "category":
        return pd.Series(pd.Categorical.from_codes(np.full(n, -1, dtype=np.int8),
                                                   categories=text_categories([])), copy=False)
    return _as_dtype(pd.Series([None] * n, dtype="object"), dtype)


def _whole_floats(s: pd.Series) -> pd.Series:
    """A float64 column of whole numbers (NaN: missing) as Int64, with one integer array
    and the mask as temporaries (pandas' ``astype`` makes several of the column's size).
    Fractions and numbers beyond int64 go through ``astype``, which raises on them."""
    v = s.to_numpy()
    missing = np.isnan(v)
    if missing.all() or not (np.nanmin(v) >= -2.0 ** 63 and np.nanmax(v) < 2.0 ** 63):
        return s.astype("Int64")
    with np.errstate(invalid="ignore"):
        ints = v.astype(np.int64)
    exact = ints == v
    exact |= missing
    if not exact.all():
        return s.astype("Int64")
    ints[missing] = 0
    return pd.Series(pd.arrays.IntegerArray(ints, missing), index=s.index, name=s.name,
                     copy=False)


def _as_category(s: pd.Series) -> pd.Series:
    """``s`` as a categorical; text categories in one dtype (:func:`text_categories`)."""
    if not _is_categorical(s):
        fast = _arrow_text_category(s)
        if fast is None:
            fast = _object_text_category(s)
        if fast is not None:
            return fast
        s = s.astype("category")
    cats = s.cat.categories
    if cats.dtype == _TEXT_INDEX or not pd.api.types.is_string_dtype(cats.dtype) or (
            len(cats) and not all(isinstance(v, str) for v in cats.tolist())):
        return s
    dtype = _text_dtype(cats.tolist()) if not s.cat.ordered else \
        pd.CategoricalDtype(text_categories(cats.tolist()), ordered=True)
    return pd.Series(pd.Categorical.from_codes(s.cat.codes.to_numpy(), dtype=dtype),
                     index=s.index, name=s.name)


def _arrow_text_category(s: pd.Series) -> pd.Series | None:
    """``s.astype("category")`` of an Arrow-backed text column (pandas 3's ``str``, and
    :data:`STRING`), categories in :func:`text_categories`' dtype: the distinct values by
    Arrow's dictionary encoding, sorted (code point order, as pandas sorts them), and one
    dtype object per set of values (:func:`_text_dtype`). pandas' own conversion of a
    column of a few hundred rows took ~0.4 ms (its validation of a new dtype's categories
    included); None for any other column."""
    if not isinstance(s.array, pd.arrays.ArrowStringArray):
        return None
    import pyarrow as pa

    arr = pa.array(s.array)
    if isinstance(arr, pa.ChunkedArray):   # (pa.array gives one array; kept in case)
        arr = arr.combine_chunks()
    if len(arr) <= _SMALL_TEXT:   # a few hundred rows: coded in Python, as objects are
        return _coded(arr.to_pylist(), s)
    enc = arr.dictionary_encode()
    values = enc.dictionary.to_pylist()
    order = sorted(range(len(values)), key=values.__getitem__)
    recode = np.empty(len(values) + 1, dtype=np.int64)
    recode[order] = np.arange(len(values))
    recode[-1] = -1   # a null's index (filled with -1 below) stays null
    codes = recode[enc.indices.fill_null(-1).to_numpy()]
    dtype = _text_dtype([values[i] for i in order])
    return pd.Series(pd.Categorical.from_codes(codes, dtype=dtype, validate=False),
                     index=s.index, name=s.name, copy=False)


def _object_text_category(s: pd.Series) -> pd.Series | None:
    """``s.astype("category")`` (then :func:`text_categories`) of a small object column of
    text and nulls (None, NaN; a reader's all-None column): the values coded in Python,
    sorted as pandas sorts them. None for any other column (numbers, ``pd.NA``, more than
    :data:`_OBJECT_TEXT` rows): pandas' conversion took ~0.9 ms a column of a small log."""
    if not (isinstance(s.dtype, np.dtype) and s.dtype == object) or len(s) > _OBJECT_TEXT:
        return None
    values = s.tolist()
    for v in values:
        if not (type(v) is str or v is None or (type(v) is float and v != v)):
            return None
    return _coded(values, s)


def _coded(values: list[Any], s: pd.Series) -> pd.Series:
    """The categorical of ``values`` (``s``'s, as Python objects: text, and None or NaN for
    null) on ``s``'s index and name: the distinct texts sorted (as pandas sorts them)."""
    cats = sorted({v for v in values if type(v) is str})
    at = {v: i for i, v in enumerate(cats)}
    codes = np.fromiter((at.get(v, -1) for v in values), dtype=np.int64, count=len(values))
    return pd.Series(pd.Categorical.from_codes(codes, dtype=_text_dtype(cats), validate=False),
                     index=s.index, name=s.name, copy=False)


def _all_none(s: pd.Series) -> bool:
    """Whether ``s`` is an object column of None only (a reader's column of rows that never
    set it), small enough to look at in Python."""
    return (isinstance(s.dtype, np.dtype) and s.dtype == object and len(s) <= _IN_PYTHON
            and all(v is None for v in s.tolist()))


#: Arrow text columns up to this many rows are coded in Python (:func:`_arrow_text_category`;
#: above, Arrow's dictionary encoding is faster: 0.45 against 0.37 ms at 4,000 rows)
_SMALL_TEXT = 1024
#: object text columns up to this many rows are coded in Python (:func:`_object_text_category`;
#: pandas is faster above ~20,000 rows)
_OBJECT_TEXT = 16_384
#: object columns up to this many rows are looked at in Python for all None (:func:`_all_none`)
_IN_PYTHON = 100_000


def _text_dtype(values: list[str]) -> pd.CategoricalDtype:
    """The unordered categorical dtype of these text categories (:func:`text_categories`),
    one object per list of values, kept (a table's columns hold the same few names file
    after file; a new dtype checks its categories each time)."""
    key = tuple(values)
    dtype = _TEXT_DTYPES.get(key)
    if dtype is None:
        if len(_TEXT_DTYPES) >= _TEXT_DTYPES_MAX:
            _TEXT_DTYPES.clear()
        dtype = _TEXT_DTYPES[key] = pd.CategoricalDtype(text_categories(values))
    return dtype


#: :func:`_text_dtype`'s dtypes by their categories (cleared when it holds this many)
_TEXT_DTYPES: dict[tuple[str, ...], pd.CategoricalDtype] = {}
_TEXT_DTYPES_MAX = 4096


def _categorical_strings(s: pd.Series) -> pd.Series:
    """A categorical column of strings as :data:`STRING`: the categories converted once and
    taken by code in Arrow (``astype`` makes a Python object per row). Other categories
    (numbers, ...) go through ``astype``."""
    import pyarrow as pa  # a dependency of STRING

    categories = s.cat.categories
    if not (categories.empty or pd.api.types.is_string_dtype(categories.dtype)) or \
            categories.hasnans:
        return s.astype(STRING)
    codes = s.cat.codes.to_numpy()
    values = pa.array(categories.to_numpy(dtype=object, na_value=None), pa.large_string())
    taken = values.take(pa.array(codes, mask=codes < 0))
    return pd.Series(pd.array(taken, dtype=STRING), index=s.index, name=s.name)
