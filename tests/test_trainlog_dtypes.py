"""The training-log tables' dtypes and the vectorised rules behind their columns.

- Text columns (``source``, ``instance``, ``name``, ``label``, ``pattern``, ...) are
  categorical, as the schema says, on both engines; two files' tables concatenate into the
  same dtypes (the categories united, no column of objects).
- ``step`` and ``repeat`` (:func:`instances.steps_and_repeats`, linear, with a radix sort)
  equal what a row-by-row reading of the rules gives, on every real log of the fixtures
  and on random frames.
- :func:`schema.unite_categories`, the Int64 conversions of :func:`schema.conform` and its
  columns of nulls.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace import memory, schema
from dptrace.formats.trainlog import instances
from dptrace.formats.trainlog.tables import THROUGHPUT, TRAIN_METRICS

FIXTURES = Path(__file__).parent / "fixtures" / "trainlog"
LOGS = sorted(p for p in FIXTURES.iterdir() if p.is_file() and p.suffix != ".tsv")
TABLES = {"throughput": THROUGHPUT, "train_metrics": TRAIN_METRICS}


def _check_dtypes(ds: dptrace.Dataset) -> None:
    for name, table in TABLES.items():
        df = ds[name]
        for col in table.loaded_columns:
            got = df[col.name].dtype
            if col.dtype == "category":
                assert isinstance(got, pd.CategoricalDtype), (name, col.name, got)
            else:
                assert str(got) == col.dtype, (name, col.name, got)


def test_text_columns_are_categorical_in_the_schema():
    for table in TABLES.values():
        dtypes = {c.name: c.dtype for c in table.columns}
        for col in ("source", "instance", "name", "pattern"):
            assert dtypes[col] == "category", (table.name, col)
    assert {c.name: c.dtype for c in THROUGHPUT.columns}["label"] == "category"


@pytest.mark.parametrize("engine", ["fast", "general"])
def test_dtypes_on_a_real_log(engine):
    log = FIXTURES / "sambanova_dataparallel_seed003.txt"
    ds = dptrace.read_trainlog(log, engine=engine)
    assert len(ds["throughput"])
    _check_dtypes(ds)
    tp = ds["throughput"]
    assert tp["source"].cat.categories.tolist() == [str(log)]
    # the categories are the values the rows hold, and they read as text
    assert set(tp["instance"].cat.categories) == set(tp["instance"].dropna().astype(str))
    assert set(tp["name"].astype(str)) <= set(tp["name"].cat.categories)


def test_two_files_concatenate_into_categoricals():
    a = FIXTURES / "sambanova_dataparallel_seed003.txt"
    b = FIXTURES / "ug_sn30_multinode_from_docs.md"
    alone = {p: dptrace.load(p) for p in (a, b)}
    both = dptrace.load([a, b])
    _check_dtypes(both)
    for name in TABLES:
        df = both[name]
        assert sorted(df["source"].cat.categories) == sorted({str(a), str(b)} & set(
            df["source"].astype(str)))
        # the same rows as each file alone, value for value
        for p, ds in alone.items():
            mine = df[df["source"] == str(p)].reset_index(drop=True)
            want = ds[name]
            assert len(mine) == len(want)
            for col in ("instance", "name", "pattern"):
                assert mine[col].astype(object).tolist() == want[col].astype(object).tolist()


def test_unite_categories():
    x = pd.DataFrame({"k": pd.Categorical(["b", "a"]), "phase": pd.Categorical(
        ["eval", "train"], categories=["train", "eval"]), "v": [1, 2]})
    y = pd.DataFrame({"k": pd.Categorical(["c", None]), "phase": pd.Categorical(
        ["train", "train"], categories=["train", "eval"]), "v": [3, 4]})
    empty = pd.DataFrame({"k": pd.Series([], dtype=object), "phase": pd.Series([], dtype=object),
                          "v": pd.Series([], dtype=object)})
    out = schema.concat([x, empty, y])
    assert isinstance(out["k"].dtype, pd.CategoricalDtype)
    assert out["k"].cat.categories.tolist() == ["a", "b", "c"]          # sorted union
    assert out["k"].astype(object).tolist()[:3] == ["b", "a", "c"]
    assert pd.isna(out["k"].iloc[3])
    assert out["phase"].cat.categories.tolist() == ["train", "eval"]     # same: kept in order
    assert out["v"].tolist() == [1, 2, 3, 4]
    # the inputs are not changed
    assert x["k"].cat.categories.tolist() == ["a", "b"]


def test_category_of_arrow_strings_has_the_default_text_categories():
    s = pd.Series(["b", "a", None], dtype=schema.STRING)
    got = schema._as_dtype(s, "category")
    assert got.cat.categories.dtype == pd.Index(["x"]).dtype
    assert got.astype(object).tolist()[:2] == ["b", "a"] and pd.isna(got.iloc[2])
    plain = schema._as_dtype(pd.Series(["a", "b"], dtype=object), "category")
    assert got.dtype == plain.dtype or set(got.cat.categories) == set(plain.cat.categories)
    assert pd.concat([got, plain]).dtype == got.dtype


@pytest.mark.parametrize("values", [[1.0, np.nan, 3.0], [np.nan, np.nan], [], [-5.0, 2.0 ** 62],
                                    [0.0]])
def test_int64_from_floats(values):
    s = pd.Series(values, dtype="float64")
    got = schema._as_dtype(s, "Int64")
    assert str(got.dtype) == "Int64"
    want = pd.Series(values, dtype="float64").astype("Int64")
    assert got.equals(want)


@pytest.mark.parametrize("values", [[1.5], [2.0 ** 70], [np.inf]])
def test_int64_from_floats_that_are_not_integers_raises(values):
    """As pandas' own conversion does (readers make such numbers missing first)."""
    with pytest.raises((TypeError, OverflowError)):
        pd.Series(values, dtype="float64").astype("Int64")
    with pytest.raises((TypeError, OverflowError)):
        schema._as_dtype(pd.Series(values, dtype="float64"), "Int64")


def test_int64_from_int64_and_missing_columns():
    got = schema.conform({"source": ["a", "b"], "lineno": np.array([3, 4])}, TRAIN_METRICS)
    assert got["lineno"].tolist() == [3, 4] and str(got["lineno"].dtype) == "Int64"
    for col in TRAIN_METRICS.columns:   # the others: nulls of the schema's dtype
        if col.dtype == "bool":             # (a bool has none: False, as astype(bool))
            assert not got[col.name].any(), col.name
        elif col.name not in ("source", "lineno"):
            assert got[col.name].isna().all(), col.name
    assert all(isinstance(got[c].dtype, pd.CategoricalDtype) for c in ("instance", "name"))
    assert str(got["step"].dtype) == "Int64" and got["value"].dtype == "float64"


def test_release_is_harmless():
    memory.release(0)
    memory.release(10 ** 6)


def _hugepage() -> bool | None:
    try:
        from numpy._core.multiarray import _get_madvise_hugepage
    except ImportError:
        return None
    return bool(_get_madvise_hugepage())


def test_reading_leaves_numpys_huge_page_advice_alone(tmp_path, monkeypatch):
    """A library does not flip numpy's process-wide huge-page setting (issue 31): reading a
    log, in this process, leaves it as the user set it, either way."""
    if _hugepage() is None:
        pytest.skip("this numpy has no huge-page switch")
    from numpy._core.multiarray import _set_madvise_hugepage
    path = tmp_path / "slurm-1.out"
    path.write_text("3: \rEpoch 0: 5/10 [00:01<00:01, 4.50it/s, loss=0.5]\n0: loss: 1.5\n")
    import dptrace.formats.trainlog.fast as fast
    real = fast.Found.read
    seen: list[bool | None] = []

    def spy(self, *args):
        seen.append(_hugepage())
        return real(self, *args)
    before = _hugepage()
    try:
        for state in (True, False):
            _set_madvise_hugepage(state)
            seen.clear()
            monkeypatch.setattr(fast.Found, "read", spy)
            ds = dptrace.load(path, executor="serial")
            monkeypatch.undo()
            assert len(ds["throughput"]) == 1 and len(ds["train_metrics"]) == 2
            assert seen == [state] and _hugepage() is state
    finally:
        _set_madvise_hugepage(bool(before))


# ---- step and repeat: the vectorised rules against a row-by-row reading -------------------

def _reference(df: pd.DataFrame, instance: pd.Series) -> tuple[list[float], list[bool]]:
    """The rules of :mod:`.instances`, one row at a time: a stream is (pattern, name,
    label, metric, printer); its stepped rows in file order; a pass ends where the step
    goes down; a repeat has the step and epoch of the row before it in its pass; global
    steps add the earlier passes' last steps to rows with an epoch, when some stream
    restarted and some stepped row has an epoch; a global end-of-run figure without a step
    (COPY_PATTERNS) repeats an earlier one of its stream with the same value and epoch, any
    other global figure without a step only when its line's figures all equal the previous
    line of their streams, on the line right before; documented instances never repeat."""
    def norm(v: object) -> object:
        return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA \
            else v

    def num(v: object) -> float:
        v = norm(v)
        return math.nan if v is None else float(v)  # type: ignore[arg-type]

    kinds = [c for c in ("pattern", "name", "label", "metric") if c in df]
    n = len(df)
    key = [tuple(norm(df[c].iloc[i]) for c in kinds) + (norm(instance.iloc[i]),)
           for i in range(n)]
    step = [num(v) for v in df["step"]]
    epoch = [num(v) for v in df["epoch"]]
    documented = [p in instances.INSTANCE_PATTERNS for p in df["pattern"].astype(object)]
    repeat = [False] * n
    last: dict[tuple, int] = {}            # stream -> its previous stepped row
    pass_of = [0] * n
    maxima: dict[tuple, list[float]] = {}  # stream -> each pass's largest step
    restarted = False
    for i in range(n):
        if math.isnan(step[i]):
            continue
        k = key[i]
        j = last.get(k)
        if j is None:
            maxima[k] = [step[i]]
        elif step[i] < step[j]:
            restarted = True
            pass_of[i] = pass_of[j] + 1
            maxima[k].append(step[i])
        else:
            pass_of[i] = pass_of[j]
            maxima[k][-1] = max(maxima[k][-1], step[i])
            same_epoch = epoch[i] == epoch[j] or (math.isnan(epoch[i]) and math.isnan(epoch[j]))
            repeat[i] = step[i] == step[j] and same_epoch
        last[k] = i
    out = list(step)
    if restarted and any(not math.isnan(step[i]) and not math.isnan(epoch[i]) for i in range(n)):
        for i in range(n):
            if not math.isnan(step[i]) and not math.isnan(epoch[i]):
                out[i] = step[i] + sum(maxima[key[i]][:pass_of[i]])
    if "scope" in df:
        seen: set[tuple] = set()
        scope = df["scope"].astype(object).tolist()
        line = [num(v) for v in df["lineno"]] if "lineno" in df else list(range(n))
        previous: dict[tuple, int] = {}  # a series' stream -> its previous row
        redrawn: dict[float, bool] = {}  # a line of series rows -> all of them redrawn
        for i in range(n):
            if math.isnan(step[i]) and scope[i] == "global" and not documented[i]:
                e = None if math.isnan(epoch[i]) else epoch[i]
                v = num(df["value"].iloc[i])
                if df["pattern"].iloc[i] in instances.COPY_PATTERNS:
                    # an end-of-run figure: a copy with the same value and epoch repeats
                    v_key = (key[i], None if math.isnan(v) else v, e)
                    repeat[i] = v_key in seen
                    seen.add(v_key)
                    continue
                # a series: the line right after the stream's previous one, the same figures
                j = previous.get(key[i])
                again = j is not None and line[i] == line[j] + 1 and (
                    num(df["value"].iloc[j]) == v or (math.isnan(v) and math.isnan(
                        num(df["value"].iloc[j])))) and (
                    epoch[j] == epoch[i] or (math.isnan(epoch[i]) and math.isnan(epoch[j])))
                redrawn[line[i]] = redrawn.get(line[i], True) and again
                previous[key[i]] = i
        for i in range(n):
            if math.isnan(step[i]) and scope[i] == "global" and not documented[i] \
                    and df["pattern"].iloc[i] not in instances.COPY_PATTERNS:
                repeat[i] = redrawn[line[i]]
    for i in range(n):
        if documented[i]:
            repeat[i] = False
    return out, repeat


def _same(got: tuple[pd.Series, np.ndarray], want: tuple[list[float], list[bool]]) -> None:
    steps = pd.Series(got[0]).astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    np.testing.assert_array_equal(steps, np.array(want[0], dtype="float64"))
    assert got[1].tolist() == want[1]


def _frames_of(log: Path) -> list[tuple[pd.DataFrame, pd.Series]]:
    """What the reader hands steps_and_repeats for each table of ``log``."""
    seen: list[tuple[pd.DataFrame, pd.Series]] = []
    real = instances.steps_and_repeats

    def spy(df: pd.DataFrame, instance: pd.Series) -> tuple[pd.Series, np.ndarray]:
        seen.append((df.copy(), instance.copy()))
        return real(df, instance)

    instances.steps_and_repeats = spy  # type: ignore[assignment]
    try:
        dptrace.load(log)
    finally:
        instances.steps_and_repeats = real  # type: ignore[assignment]
    return seen


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_steps_and_repeats_on_real_logs(log):
    frames = _frames_of(log)
    for df, instance in frames:
        _same(instances.steps_and_repeats(df, instance), _reference(df, instance))


def test_steps_and_repeats_restart_with_epochs():
    """A bar per epoch (steps 1-3, then 1-3 again in epoch 2) gets global steps; tqdm's
    closing redraw of step 3 is a repeat; another printer's bar is its own stream."""
    df = pd.DataFrame({
        "pattern": pd.Categorical(["tqdm"] * 9), "name": ["tqdm"] * 9, "label": ["Epoch"] * 9,
        "metric": ["iterations_per_s"] * 9, "scope": ["instance"] * 9, "value": [1.0] * 9,
        "step": [1, 2, 3, 3, 1, 2, 3, 1, 2], "epoch": [1, 1, 1, 1, 2, 2, 2, 1, 1]})
    instance = pd.Series(["0"] * 7 + ["1"] * 2, dtype="category")
    step, repeat = instances.steps_and_repeats(df, instance)
    assert step.tolist() == [1, 2, 3, 3, 4, 5, 6, 1, 2]
    assert repeat.tolist() == [False, False, False, True, False, False, False, False, False]
    _same((step, repeat), _reference(df, instance))


@pytest.mark.parametrize("seed", range(40))
def test_steps_and_repeats_on_random_frames(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    df = pd.DataFrame({
        "pattern": pd.Categorical(rng.choice(["tqdm", "sambaflow", "hf_trainer"], n)),
        "name": rng.choice(np.array(["a", "b", None], dtype=object), n),
        "metric": pd.Categorical(rng.choice(["x", "y"], n)),
        "scope": rng.choice(["global", "instance"], n),
        "value": rng.integers(0, 3, n).astype(float),
        "step": np.where(rng.random(n) < (0.2 if seed % 2 else 0.0), np.nan,
                         rng.integers(0, 6, n)).astype(float),
        "epoch": np.where(rng.random(n) < 0.5, np.nan, rng.integers(0, 3, n)).astype(float),
    })
    instance = pd.Series(rng.choice(np.array(["0", "1", None], dtype=object), n))
    if seed % 3 == 0:
        instance = instance.astype("category")
    _same(instances.steps_and_repeats(df, instance), _reference(df, instance))


# ---- the categorical shortcuts of the finish step: what pandas gives, by the codes ---------

def _categoricals(seed: int) -> list[pd.Series]:
    """Categoricals with nulls, unused and unsorted categories, of 8-, 16- and 32-bit codes,
    and the same values as plain object and Arrow string columns."""
    rng = np.random.default_rng(seed)
    out = []
    for k in (1, 3, 120, 300, 40_000):
        cats = [f"v{i:05d}" for i in rng.permutation(k)]
        values = rng.choice(np.array(cats + [None], dtype=object), size=50_000)
        values[: min(k, 50_000)] = cats[: min(k, 50_000)]   # every code present early
        used = pd.Series(values).dropna().unique()
        for categories in (cats, cats + ["unused-a", "unused-b"], list(used)):
            out.append(pd.Series(pd.Categorical(values, categories=categories)))
        out.append(pd.Series(values, dtype=object))
        out.append(pd.Series(values, dtype=schema.STRING))
    return out


@pytest.mark.parametrize("seed", [0])
def test_isin_and_factorize_by_codes_equal_pandas(seed):
    for s in _categoricals(seed):
        for wanted in ({"v00000", "v00002"}, {"nothing"}, set(), {"v00001", "unused-a"}):
            assert schema.isin(s, wanted).tolist() == s.isin(wanted).tolist()
        codes, values = schema.factorize(s)
        table = values.tolist()
        back = [None if c < 0 else table[c] for c in codes.tolist()]
        assert back == [None if pd.isna(v) else v for v in s.tolist()]


@pytest.mark.parametrize("seed", [1])
def test_tidy_categories_keeps_the_used_values_sorted(seed):
    from dptrace.formats.trainlog.read import _tidy_categories
    for s in _categoricals(seed):
        if not isinstance(s.dtype, pd.CategoricalDtype):
            continue
        codes = s.cat.codes.to_numpy()
        counts = s.value_counts(sort=False)   # every category, unused ones 0
        assert schema.code_counts(codes, len(s.cat.categories)).tolist() == \
            [int(counts[c]) for c in s.cat.categories]
        got = _tidy_categories(pd.DataFrame({"x": s.copy()}))["x"]
        assert got.cat.categories.tolist() == sorted(s.dropna().unique())
        assert got.astype(object).tolist() == s.astype(object).tolist()
        assert got.cat.codes.dtype == s.cat.codes.dtype


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.int64])
def test_lookup_by_codes_is_indexing_a_chunk_at_a_time(monkeypatch, dtype):
    monkeypatch.setattr(schema, "_LOOKUP_CHUNK", 7)   # chunk edges inside the data
    rng = np.random.default_rng(3)
    k = 100 if np.iinfo(dtype).max >= 100 else 50
    lo = -1 if np.iinfo(dtype).min < 0 else 0
    for n in (0, 1, 6, 7, 8, 50, 101):
        codes = rng.integers(lo, k, size=n).astype(dtype)
        table = np.append(rng.normal(size=k), np.nan)   # the last: code -1
        want = table[codes.astype(np.int64)]
        np.testing.assert_array_equal(schema.lookup(table, codes), want)
        out = np.full(n, 9.0)
        assert schema.lookup(table, codes, out=out) is out
        np.testing.assert_array_equal(out, want)


def test_joined_codes_have_the_dtype_pandas_keeps() -> None:
    """The join writes a categorical's codes in the dtype pandas keeps for its number of
    categories (another would be copied into it by ``from_codes``)."""
    from dptrace.formats.trainlog.read import _codes_dtype
    for k in (1, 2, 126, 127, 128, 32766, 32767, 40_000):
        dtype = _codes_dtype(k)
        cat = pd.Categorical.from_codes(np.zeros(2, dtype=dtype),
                                        categories=[str(i) for i in range(k)])
        assert cat.codes.dtype == dtype, k


def test_steps_added_a_chunk_at_a_time(monkeypatch) -> None:
    """The join adds each stream's earlier passes to its steps in place, a chunk of rows at
    a time: as the whole-column formula, rows without an epoch or step left as they are."""
    from dptrace.formats.trainlog.read import _add_steps
    monkeypatch.setattr(schema, "_LOOKUP_CHUNK", 7)
    rng = np.random.default_rng(11)
    for n in (0, 1, 7, 8, 50):
        per_stream = rng.integers(0, 1000, size=5).astype(np.int64)
        stream = rng.integers(0, 5, size=n).astype(np.int16)
        none = rng.random(n) < 0.3
        steps = rng.integers(0, 100, size=n).astype(np.int64)
        want = steps + np.where(none, 0, per_stream[stream.astype(np.int64)])
        _add_steps(steps, per_stream, stream, none)
        np.testing.assert_array_equal(steps, want)
