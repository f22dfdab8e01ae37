"""Throughput aggregates, each checked against numbers worked out by hand."""

import math

import pandas as pd
import pytest

from dptrace import schema
from dptrace.formats.trainlog.tables import THROUGHPUT
from dptrace.formats.trainlog.throughput import mark_warmup, per_instance, throughput_summary


def frame(rows: list[dict]) -> pd.DataFrame:
    base = {"source": "s", "pattern": "p", "name": "n", "label": None, "metric": "samples_per_s",
            "scope": "instance", "step": None, "epoch": None, "lineno": 1}
    return schema.conform(pd.DataFrame([{**base, **r} for r in rows]), THROUGHPUT)


def test_sum_mean_hmean_std_cv_by_hand():
    tp = frame([{"instance": str(i), "value": v} for i, v in enumerate([100.0, 200.0, 400.0])])
    s = throughput_summary(tp).iloc[0]
    assert s["sum"] == 700.0 and s["job_value"] == 700.0
    assert s["mean"] == pytest.approx(700 / 3)
    assert s["hmean"] == pytest.approx(3 / (1 / 100 + 1 / 200 + 1 / 400))  # 171.43
    # sample std of 100, 200, 400: mean 233.33; squares 17777.8+1111.1+27777.8 = 46666.7 / 2
    assert s["std"] == pytest.approx(math.sqrt(46666.666666 / 2), rel=1e-6)
    assert s["cv"] == pytest.approx(s["std"] / s["mean"])
    assert s["slowest_instance"] == "0" and s["slowest_value"] == 100.0
    assert s["slowest_below_median_pct"] == pytest.approx(50.0)  # median 200
    assert s["stragglers"] == 1
    assert s["job_rule"] == "sum over 3 instances"


def test_warmup_excludes_first_tenth_at_least_one_step():
    # one instance, 20 steps: the first 2 are warm-up (10%); 3 steps: 1 warm-up; 2 steps: none
    rows = [{"instance": "0", "step": k, "value": 10.0 if k < 2 else 100.0} for k in range(20)]
    rows += [{"instance": "1", "step": k, "value": float(k + 1)} for k in range(3)]
    rows += [{"instance": "2", "step": k, "value": float(k + 1)} for k in range(2)]
    tp = frame(rows)
    warm = mark_warmup(tp)
    assert warm.sum() == 3
    inst = per_instance(tp).set_index("instance")
    assert inst.loc["0", "value"] == 100.0
    assert inst.loc["0", "value_all"] == pytest.approx((2 * 10 + 18 * 100) / 20)
    assert inst.loc["1", "value"] == 2.5 and inst.loc["2", "value"] == 1.5
    s = throughput_summary(tp).iloc[0]
    assert s["job_value"] == pytest.approx(100 + 2.5 + 1.5)
    assert s["job_value_all_steps"] == pytest.approx(91 + 2 + 1.5)
    assert s["warmup_rows"] == 3


def test_warmup_orders_by_step_not_by_line():
    rows = [{"instance": "0", "step": k, "value": v} for k, v in ((3, 9.0), (1, 1.0), (2, 9.0))]
    assert mark_warmup(frame(rows)).tolist() == [False, True, False]


def test_global_copies_never_summed():
    tp = frame([{"instance": str(i), "value": 1.196, "scope": "global"} for i in range(16)])
    s = throughput_summary(tp).iloc[0]
    assert s["job_value"] == pytest.approx(1.196)
    assert s["job_rule"] == "global figure; mean of 16 copies, not summed"


def test_series_are_kept_apart():
    tp = frame([
        {"instance": "0", "value": 1.0, "name": "a"},
        {"instance": "0", "value": 5.0, "name": "b", "scope": "global"},
        {"instance": "0", "value": 2.0, "name": "a", "source": "t"},
    ])
    s = throughput_summary(tp)
    assert len(s) == 3
    assert s.set_index(["source", "name"]).loc[("s", "a"), "job_value"] == 1.0


def test_null_labels_survive_grouping():
    tp = frame([{"instance": "0", "value": 1.0, "label": "Training"},
                {"instance": "0", "value": 2.0}])
    s = throughput_summary(tp)
    assert sorted(s["label"].fillna("-")) == ["-", "Training"]


def test_empty_input():
    assert throughput_summary(THROUGHPUT.empty()).empty
    assert per_instance(THROUGHPUT.empty()).empty
