"""A large training log read by a serial executor is scanned and finished in ranges one
after another and joined as the workers' ranges are (its rows are never held raw and
finished at once): the same tables and problems as one scan of the whole file, with
either engine, where ranges cut a bar's close redraw, a file's last number, and
documented instances without a prefix (ranges not finished alone)."""

from __future__ import annotations

import pytest
from pandas.testing import assert_frame_equal

import dptrace
from dptrace.formats.trainlog import read as trainlog


def _log(tmp_path, kind):
    lines = []
    for i in range(1200):
        rank = i % 4
        if kind == "bars":
            upd = (f"{rank}: Epoch {i // 300}:  {i % 100:2d}%|#   | {i}/1200 [00:01<00:09, "
                   f"{1 + i % 11}.25it/s, loss=0.{i % 9}5]")
            lines += [upd + "\r" + upd.replace("it/s", "s/it") + "\n", upd + "\n"]
            if i % 10 == 0:
                lines.append(f"{rank}: e2e samples_per_sec: {i}.25 train loss 0.{i}\n")
        else:  # SambaFlow's documented instances, no prefix: numbered through the file
            lines.append(f"e2e samples_per_sec: {100 + i}.5\n")
        lines.append(f"{rank}: noise {i}\n")
    p = tmp_path / f"slurm-{kind}.out"
    p.write_text("".join(lines) + "tail e2e samples_per_sec: 1.0")
    return p


@pytest.mark.parametrize("engine", ["auto", "general"])
@pytest.mark.parametrize("kind", ["bars", "documented"])
def test_serial_ranges_equal_one_scan(tmp_path, monkeypatch, engine, kind):
    p = _log(tmp_path, kind)
    whole = dptrace.read_trainlog(p, engine=engine, executor="serial")
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(trainlog, "RANGE_BYTES", 16 << 10)
    seen = []
    scan = trainlog._scan_parallel
    monkeypatch.setattr(trainlog, "_scan_parallel",
                        lambda *a, **k: seen.append(a[3]) or scan(*a, **k))
    ranges = dptrace.read_trainlog(p, engine=engine, executor="serial")
    assert len(seen) == 1 and seen[0].workers == 1
    assert len(whole["throughput"]) > 1000
    for table in ("throughput", "train_metrics"):
        assert_frame_equal(whole[table], ranges[table])
    assert_frame_equal(whole.problems, ranges.problems)
    assert_frame_equal(whole.sources, ranges.sources)
