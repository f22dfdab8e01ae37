"""Lines printed every N steps without a step are a time series, not copies of one figure
(issue 29, 1.2): the job figure is their mean after warm-up, and only a line printed again at
once is a repeat. Checked against the files' own numbers, read here with a regex."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dptrace
from dptrace.formats.trainlog import instances, job

ROOT = Path(__file__).resolve().parent.parent
DSCHAT = ROOT / "tests/fixtures/trainlog/dschat_step3_opt1.3b_critic350m_gbs64.log"
SCALING = (ROOT / "../shared/realdata/scaling").resolve()


def _steady_mean(values: list[float]) -> float:
    """The mean after warm-up as the docs state it: drop the first max(1, floor(n/10))."""
    cut = max(1, len(values) // 10) if len(values) >= 3 else 0
    rest = values[cut:]
    return sum(rest) / len(rest)


def _job(path: Path):
    ds = dptrace.load(str(path))
    return ds, job.job_figures(ds["throughput"], ds.runs, metrics=ds["train_metrics"])


def test_dschat_step3_lines_are_a_series_none_lost_as_repeats():
    text = DSCHAT.read_text()
    cur = [float(v) for v in re.findall(r"\|CurSamplesPerSec=([0-9.]+)", text)]
    assert len(cur) == 476 and len(set(cur)) < 200  # many equal values, all printed once
    ds, table = _job(DSCHAT)
    tp = ds["throughput"]
    rows = tp[tp["name"].astype(str) == "CurSamplesPerSec"]
    assert len(rows) == 476 and not rows["repeat"].any()
    row = table[table["metric"].astype(str) == "samples_per_s"].iloc[0]
    assert row["name"] == "CurSamplesPerSec" and row["how"] == "steady_global"
    assert row["value"] == pytest.approx(_steady_mean(cur), rel=1e-9)  # 16.832448
    assert row["value"] == pytest.approx(16.832448, abs=1e-6)


@pytest.mark.parametrize("name", ["mlperf0.7_dell_resnet_n1_4gpu.txt",
                                  "mlperf0.7_dell_resnet_n4_16gpu.txt",
                                  "mlperf1.0_nv_resnet_mxnet_n1_8gpu.txt",
                                  "mlperf1.0_nv_resnet_mxnet_n8_64gpu.txt"])
def test_mxnet_speedometer_is_the_mean_after_warmup_not_the_first_line(name):
    path = SCALING / name
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    speeds = [float(v) for v in re.findall(r"\tSpeed: ([0-9.]+) samples/sec", path.read_text())]
    _, table = _job(path)
    row = table[table["metric"].astype(str) == "samples_per_s"]
    row = row[row["pattern"].astype(str) == "mxnet_speedometer"].iloc[0]
    assert row["how"] == "steady_global" and row["copies_agree"]
    assert row["value"] == pytest.approx(_steady_mean(speeds), rel=1e-9)
    assert row["value"] != pytest.approx(speeds[0], rel=0.01)  # the warm-up line


def test_a_line_printed_again_at_once_repeats_equal_values_apart_do_not(tmp_path):
    lines = DSCHAT.read_text().splitlines(keepends=True)
    e2e = [i for i, line in enumerate(lines) if "CurSamplesPerSec=" in line]
    # two ranks without a launcher prefix print the same line: the second is a redraw
    doubled = lines[:e2e[3] + 1] + [lines[e2e[3]]] + lines[e2e[3] + 1:]
    log = tmp_path / "doubled.log"
    log.write_text("".join(doubled))
    tp = dptrace.load(str(log))["throughput"]
    cur = tp[tp["name"].astype(str) == "CurSamplesPerSec"]
    assert len(cur) == 477 and cur["repeat"].sum() == 1
    assert int(cur.loc[cur["repeat"], "lineno"].iloc[0]) == e2e[3] + 2
    # lines 683 and 687 of the file print the same CurSamplesPerSec and AvgSamplesPerSec
    # (17.07, 16.78), four lines apart: a series that did not change, not a copy
    tp = dptrace.load(str(DSCHAT))["throughput"]
    at = tp[tp["lineno"].isin([683, 687])]
    assert len(at) == 4 and not at["repeat"].any()


def test_copy_patterns_are_the_analysis_end_of_run_patterns():
    assert instances.COPY_PATTERNS == job.END_OF_RUN_PATTERNS
