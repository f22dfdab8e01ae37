"""A time is not a rate (issue 29, 1.4): Megatron's ``elapsed time per iteration (ms)`` in
compare and scaling is better lower, and an efficiency from it needs the global batch per
step. Real Megatron logs of tests/fixtures/trainlog; every number expected is read here
from the logs' own iteration lines (the job figure's rule: the mean after dropping the
first tenth of the steps, at least one, as warm-up)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.analysis import scaling as scl
from dptrace.findings import runs as rules

TL = Path(__file__).resolve().parent / "fixtures" / "trainlog"
GPT8 = TL / "megatron_ds_gpt3_125M_8gpu.log"                    # 8 ranks, global batch 256
GPT8_LTD = TL / "megatron_ds_gpt3_125M_randomltd_baseline.log"  # 8 ranks, global batch 256
N64 = TL / "bigscience_megatron_n64_tp4_pp64.out"               # 256 ranks, global batch 4
ZERO = TL / "bigscience_meg_ds_zero_n16.out"                    # 64 ranks, no global batch


def _step_time(path: Path) -> float:
    v = [float(x) / 1000 for x in re.findall(r"elapsed time per iteration \(ms\): ([\d.]+)",
                                             path.read_text())]
    v = v[max(1, int(len(v) * 0.1)):]
    return sum(v) / len(v)


def _batch(path: Path) -> float | None:
    b = set(re.findall(r"global batch size: +(\d+)", path.read_text()))
    return float(b.pop()) if len(b) == 1 else None


def test_compare_says_the_step_time_fell_and_never_calls_it_a_throughput():
    rep = dptrace.compare(dptrace.load(GPT8), dptrace.load(GPT8_LTD), labels=("a", "b"))
    t = rep.tables["compare.compare"]
    row = t[(t["table"] == "throughput.job") & (t["metric"] == "step_time_s")].iloc[0]
    ta, tb = _step_time(GPT8), _step_time(GPT8_LTD)
    assert row["base"] == pytest.approx(ta) and row["candidate"] == pytest.approx(tb)
    assert (row["unit"], row["better"]) == ("s", "lower")
    rate = t[(t["table"] == "throughput.job") & (t["metric"] == "samples_per_s")].iloc[0]
    assert rate["better"] == "higher" and rate["unit"] == "samples/s"
    f = rep.tables["findings.findings"]
    msgs = f.loc[f["kind"] == "throughput_change", "message"].astype(str).tolist()
    step = next(m for m in msgs if "step time" in m)
    assert tb < ta
    assert step.startswith(f"The step time fell {(ta - tb) / ta * 100:.1f}% from a to b")
    assert "(faster)" in step and "throughput" not in step
    # the rate comes first; the step time beside it is info
    assert msgs[0].startswith("The job throughput rose")
    assert set(f.loc[f["kind"] == "throughput_change", "severity"].astype(str)) == {"info"}


def test_a_step_time_that_rose_is_slower_and_a_warning_when_it_is_the_only_figure():
    cmp = pd.DataFrame([{"table": "throughput.job", "key": "job throughput",
                         "metric": "step_time_s", "base": 127.7, "candidate": 136.0,
                         "change": 8.3, "change_pct": 8.3 / 127.7 * 100, "unit": "s",
                         "change_s": math.nan, "better": "lower"}])
    f = rules.throughput_change(cmp, "off", "on", batches=(1024.0, 1024.0))
    assert len(f) == 1 and f[0].severity == "warning"
    assert f[0].message == "The step time rose 6.5% from off to on: 128 -> 136 s (slower)."
    # other work per step: not called slower
    f = rules.throughput_change(cmp, "off", "on", batches=(256.0, 2048.0))
    assert f[0].severity == "info" and "(slower)" not in f[0].message
    assert "global batch per step changed (256 -> 2,048)" in f[0].message


def test_scaling_step_time_speedup_is_t0_over_t_and_efficiency_from_the_global_batch():
    sc = dptrace.scaling({"8": dptrace.load(GPT8), "256": dptrace.load(N64)}) \
        .tables["scaling.scaling"]
    st = sc[sc["metric"] == "step_time_s"].set_index("run")
    t8, t256 = _step_time(GPT8), _step_time(N64)
    b8, b256 = _batch(GPT8), _batch(N64)
    assert (b8, b256) == (256.0, 4.0)
    r = st.loc["256"]
    assert r["job_value"] == pytest.approx(t256) and r["better"] == "lower"
    assert r["speedup"] == pytest.approx(t8 / t256)          # a time: T(N0) / T(N)
    assert r["ideal_speedup"] == 32
    assert r["efficiency"] == pytest.approx((b256 / t256) / (b8 / t8) / 32)
    assert r["global_batch"] == 4 and r["efficiency_note"] == ""
    assert st.loc["8", "efficiency"] == 1.0


def test_scaling_without_a_global_batch_computes_no_efficiency_and_says_why():
    sc = dptrace.scaling({"8": dptrace.load(GPT8), "64": dptrace.load(ZERO), "256":
                          dptrace.load(N64)}).tables["scaling.scaling"]
    assert _batch(ZERO) is None
    r = sc[(sc["run"] == "64") & (sc["metric"] == "step_time_s")].iloc[0]
    assert r["job_value"] == pytest.approx(_step_time(ZERO))
    assert r["speedup"] == pytest.approx(_step_time(GPT8) / _step_time(ZERO))
    assert r["speedup"] < 1
    assert math.isnan(r["efficiency"])
    assert "does not print its global batch per step" in r["efficiency_note"]
    f = dptrace.scaling({"8": dptrace.load(GPT8), "64": dptrace.load(ZERO)}) \
        .tables["findings.findings"]
    msgs = f["message"].astype(str).tolist()
    assert any(m.startswith("Run 64 has no efficiency: its job figure is a step time")
               for m in msgs)
    # a longer step at 64 ranks is no 'throughput fell' and no efficiency above 100%
    assert not any("throughput" in m and " s " in m for m in msgs)


def test_scaling_rules_on_step_times_speak_of_times():
    """Two runs that print only step times and their global batch (weak scaling: the batch
    doubles with the ranks): the step time grew from 10 to 14.2 s, so the rate went from
    25.6 to 36.06 samples/s: efficiency 70%, ideal step time 10 s."""
    rows = []
    for run, n, t, b in (("8", 8, 10.0, 256.0), ("16", 16, 14.2, 512.0)):
        rows.append({"run": run, "label": run, "workers": n, "metric": "step_time_s",
                     "job_value": t, "global_batch": b})
    sc = pd.DataFrame(rows)
    base = {"8": (256.0, ""), "16": (512.0, "")}
    eff, why = scl._time_efficiency(10.0 / 14.2, 2.0, "16", "8", base)
    assert why == "" and eff == pytest.approx((512 / 14.2) / (256 / 10) / 2)
    sc = sc.assign(base_run="8", speedup=[1.0, 10 / 14.2], ideal_speedup=[1.0, 2.0],
                   efficiency=[1.0, eff], efficiency_note="", missing="", better="lower")
    f = rules.scaling_efficiency(sc, None)
    assert len(f) == 1
    assert f[0].message.startswith(f"Efficiency at 16 ranks is {eff * 100:.0f}%: a step time "
                                   "of 14.2 s against an ideal 10.0 s")
    assert "throughput" not in f[0].message
    assert rules.negative_scaling(sc) == []        # the rate grew: 25.6 -> 36.1 samples/s
    slow = sc.assign(job_value=[10.0, 25.0])       # 25.6 -> 20.5 samples/s: slower
    f = rules.negative_scaling(slow)
    assert len(f) == 1 and "The job's rate fell from 25.6 samples/s at 8 ranks" in f[0].message


def test_lower_is_better_names():
    assert scl.lower_is_better("step_time_s") and not scl.lower_is_better("samples_per_s")
    assert scl.unit("step_time_s") == "s" and scl.unit("tokens_per_s") == "tokens/s"
