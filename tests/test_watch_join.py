"""The incremental training-log reader of ``dptrace watch`` joins parts finished as they are
fed (dptrace/watch/pieces.py, ``_Join``): a log cut at EVERY line boundary (two parts), and
in many random parts, gives the tables, problems and variant of one read of the whole file.

The log is built from real lines of the realdata logs (Lightning's ``Epoch N:`` bars, whose
count restarts each epoch: global steps; tqdm's identical redraw of a bar: a repeat;
DeepSpeed's ``samples/second:`` and Horovod's ``Total img/sec`` global figures without a
step, printed twice on consecutive lines by two ranks without a launcher prefix: the second
line repeats; HF Trainer's end-of-run dict printed by two ranks far apart: a copy) so that
each rule that spans a cut (a pass ending at the cut, a repeat of the row before the cut, a
redrawn line right after the cut, a copy in an earlier part) is met at some cut.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from dptrace.formats.trainlog import read as trainlog_read
from dptrace.sources import expand
from dptrace.watch.pieces import TrainlogState


def _log() -> bytes:
    rng = random.Random(7)
    lines = ["[2023-04-18 01:46:50,100] [INFO] [launch.py:142:main] WORLD INFO DICT: ..."]
    for epoch in range(3):
        for step in range(1, 9):
            rate = 40 + rng.random() * 20
            bar = (f"Epoch {epoch}:  {step * 100 // 8:2d}%|##        | {step}/8 "
                   f"[00:00<00:00, {rate:.2f}it/s, loss=0.87, v_num=15]")
            lines.append(bar)
            if step in (4, 8):
                lines.append(bar)   # tqdm's identical redraw
            if step % 3 == 0:
                value = f"{850 + rng.random() * 10:.2f}"
                lines.append(f"samples/second:                                   {value}  ")
                lines.append(f"samples/second:                                   {value}  ")
        total = f"{2700 + epoch * 10 + rng.random():.1f}"
        lines.append(f"Total img/sec on 32 GPU(s): {total} +-122.3")
        lines.append(f"Total img/sec on 32 GPU(s): {total} +-122.3")
        lines.append("some noise between the epochs")
        if epoch == 0:
            lines.append("{'train_runtime': 836.394, 'train_samples_per_second': 1.196, "
                         "'train_steps_per_second': 0.005, 'epoch': 1.0}")
    lines.append("{'train_runtime': 836.394, 'train_samples_per_second': 1.196, "
                 "'train_steps_per_second': 0.005, 'epoch': 1.0}")
    return ("\n".join(lines) + "\n").encode()


def _whole(tmp_path: Path, data: bytes) -> tuple:
    path = tmp_path / "log"
    path.write_bytes(data)
    src = expand([str(path)])[0][0]
    return trainlog_read.parse(src), src.name


def _same(a, b, what: str) -> None:
    assert a.tables.keys() == b.tables.keys(), what
    for k in a.tables:
        pd.testing.assert_frame_equal(a.tables[k], b.tables[k], obj=f"{what}: {k}")
    assert [(p.source, p.line, p.message) for p in a.problems] == \
        [(p.source, p.line, p.message) for p in b.problems], what
    assert a.variant == b.variant, what


def test_the_log_meets_every_rule_across_parts(tmp_path: Path) -> None:
    """The built log holds what the joins must carry over a cut (else the tests below
    would pass for a join that ignores it): passes of the bars, repeats of redrawn bars,
    of global lines printed twice, and of the end-of-run copy."""
    whole, _ = _whole(tmp_path, _log())
    tp = whole.tables["throughput"]
    bars = tp[tp["pattern"] == "tqdm"]
    assert bars["step"].max() == 24        # 3 epochs of 8 steps: global steps
    assert int(bars["repeat"].sum()) == 6   # two redraws per epoch
    glob = tp[tp["step"].isna() & (tp["scope"] == "global")]
    per = glob[glob["repeat"]]["pattern"].astype(str).value_counts().to_dict()
    assert per == {"deepspeed_flops": 6, "horovod_benchmark": 3, "hf_trainer": 2}


@pytest.mark.parametrize("engine", ["fast", "general"])
def test_every_cut_in_two_parts_equals_one_read(tmp_path: Path, engine: str) -> None:
    data = _log()
    whole, name = _whole(tmp_path, data)
    cuts = [i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]
    for cut in cuts:
        tl = TrainlogState(name, use_fast=engine == "fast")
        tl.feed(data[:cut])
        tl.feed(data[cut:])
        assert tl.incremental
        _same(whole, tl.result(), f"cut at byte {cut}")


def test_many_parts_and_snapshots_on_the_way_equal_one_read(tmp_path: Path) -> None:
    data = _log()
    whole, name = _whole(tmp_path, data)
    rng = random.Random(3)
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    for _ in range(30):
        cuts = sorted(rng.sample(ends[:-1], rng.randint(2, 12))) + [len(data)]
        tl, at = TrainlogState(name), 0
        for cut in cuts:
            tl.feed(data[at:cut])
            at = cut
            if rng.random() < 0.5:
                tl.result()
        _same(whole, tl.result(), f"cuts {cuts}")


def test_a_part_that_cannot_be_finished_alone_reads_the_file_again(tmp_path: Path) -> None:
    """SambaFlow's instances without a prefix are numbered through the file: the state
    reads the file again from its start (``path``) and finishes the whole file per
    snapshot from then on, with the rows of one read."""
    head = _log()
    samba = b"".join(b"inner train loop time : 33.36756229400635 for 10 epochs, number of "
                     b"global steps: 10, e2e samples_per_sec: %d.5\n" % (600 + i)
                     for i in range(3))
    data = head + samba
    whole, name = _whole(tmp_path, data)
    path = tmp_path / "log"
    tl = TrainlogState(name, path=str(path))
    tl.feed(head)
    assert tl.incremental
    tl.feed(samba)
    _same(whole, tl.result(), "after the SambaFlow lines")
    assert whole.tables["throughput"]["pattern"].eq("sambaflow").any()
    assert not tl.incremental
