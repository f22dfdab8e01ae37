"""Analyses computed once per report (``dptrace.analysis.memo``): answers found by the
identity of the tables asked about, copies to each caller, nothing kept outside a report,
and the same report with and without it."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.analysis import memo
from dptrace.reports import model

FIXTURES = Path(__file__).parent / "fixtures" / "trainlog"

calls: list[object] = []


@memo.memoized
def _count(df: pd.DataFrame, k: int = 1, opts: dict | None = None) -> pd.DataFrame:
    calls.append(id(df))
    return df.assign(y=df["x"] * k)


@memo.memoized(share=True)
def _shared(df: pd.DataFrame) -> pd.DataFrame:
    calls.append(id(df))
    return df[df["x"] > 0]


@pytest.fixture(autouse=True)
def _clear() -> None:
    calls.clear()


def test_outside_a_report_every_call_computes() -> None:
    df = pd.DataFrame({"x": [1, 2]})
    _count(df)
    _count(df)
    assert len(calls) == 2


def test_within_a_report_once_per_table_and_arguments() -> None:
    df, same = pd.DataFrame({"x": [1, 2]}), pd.DataFrame({"x": [1, 2]})
    with memo.per_report():
        a = _count(df)
        b = _count(df)
        _count(df, 2)
        _count(df, k=2)
        _count(same)  # equal, but another table: asked about on its own
        with memo.per_report():  # nested: the outer report's answers
            _count(df)
        assert len(calls) == 4
        assert a is not b and a.equals(b)  # each caller its own copy
        a.loc[0, "y"] = 99
        assert _count(df).loc[0, "y"] == 1
    _count(df)  # the report is over: nothing kept
    assert len(calls) == 5


def test_unkeyable_arguments_compute() -> None:
    df = pd.DataFrame({"x": [1]})
    with memo.per_report():
        _count(df, opts={"a": 1})
        _count(df, opts={"a": 1})  # a mapping of hashables: keyed by value
        assert len(calls) == 1
        _count(df, opts={"a": [1]})
        _count(df, opts={"a": [1]})  # lists of hashables: by value too
        assert len(calls) == 2
        _count(df, opts={"a": {1}})
        _count(df, opts={"a": {1}})
        assert len(calls) == 4  # a set (unhashable): computed each time


def test_shared_answers_are_the_same_object() -> None:
    df = pd.DataFrame({"x": [-1, 2]})
    with memo.per_report():
        a = _shared(df)
        assert _shared(df) is a
        _count(a)
        _count(_shared(df))  # the shared answer: found again
        assert len(calls) == 2
    assert len(_shared(df)) == 1


def test_arrays_keyed_by_identity() -> None:
    arr = np.arange(3)
    with memo.per_report():
        assert memo._key(arr) == memo._key(arr)
        assert memo._key(arr) != memo._key(arr.copy())


@pytest.mark.parametrize("name", ["bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out",
                                  "alcfws_horovod_tf2_cpu_n8.out",
                                  "generated/lightning_ddp2_tqdm", "generated/drift"])
def test_report_same_without_the_memo(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report of a real log, built with the memo and without it: the same JSON."""
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{name} is not among the fixtures")
    ds = dptrace.load(path)
    with_memo = json.loads(dptrace.report(ds).to_json())
    monkeypatch.setattr(model.memo, "per_report", contextlib.nullcontext)
    without = json.loads(dptrace.report(ds).to_json())
    assert with_memo == without
