"""A training log read in ranges (the parallel path of a large log, and the serial path of
one of PARALLEL_BYTES or more: ``read._scan_range`` + ``_finish_range`` per range, then
``read._joined``) gives the tables of one read of the whole file, wherever the ranges are cut.

The rule that needed the join to know where each range starts (helper D found it with the
watch's incremental reader): a global series line without a step printed again on the very
next line (DeepSpeed's ``samples/second:``, Horovod's ``Total img/sec on 32 GPU(s)``, printed by
two ranks without a launcher prefix) is a repeat in one read, and must be one when a cut falls
between the two lines (``instances.join_streams(infos, lines)``). Before, 6 of the log's 53
two-range cuts gave a throughput row whose repeat flag was False, so its duplicate figure
entered the per-instance and job figures.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest
from test_watch_join import _log

from dptrace.formats.trainlog import read
from dptrace.sources import expand


def _ranges(tmp_path: Path, data: bytes, cuts: list[int], whole=None):
    path = tmp_path / "log"
    if not path.exists():
        path.write_bytes(data)
    src = expand([str(path)])[0][0]
    whole = whole if whole is not None else read.parse(src)
    bounds = [0, *cuts, len(data)]
    parts = [read._finish_range(data, src.name,
                                read._scan_range(data, src.name, a, b, b == len(data)))
             for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return whole, read._joined(data, src.name, parts, [])


def _same(whole, joined, what: str) -> None:
    assert whole.tables.keys() == joined.tables.keys(), what
    for k in whole.tables:
        pd.testing.assert_frame_equal(joined.tables[k], whole.tables[k], obj=f"{what}: {k}")


def _newlines(data: bytes) -> list[int]:
    return [i + 1 for i, b in enumerate(data[:-1]) if b == 0x0A]


def test_every_two_range_cut_equals_one_read(tmp_path: Path) -> None:
    data = _log()
    cuts = _newlines(data)
    assert len(cuts) > 40
    whole = None
    for cut in cuts:
        whole, joined = _ranges(tmp_path, data, [cut], whole)
        _same(whole, joined, f"cut at byte {cut}")


@pytest.mark.parametrize("seed", range(8))
def test_random_three_and_four_range_cuts_equal_one_read(tmp_path: Path, seed: int) -> None:
    data = _log()
    rng = random.Random(seed)
    cuts = sorted(rng.sample(_newlines(data), rng.choice((2, 3))))
    whole, joined = _ranges(tmp_path, data, cuts)
    _same(whole, joined, f"cuts at {cuts}")


def test_a_repeat_right_after_a_cut_is_flagged(tmp_path: Path) -> None:
    """The two copies of one ``samples/second:`` figure, cut between them: one row repeats."""
    data = _log()
    text = data.decode()
    first = text.index("samples/second:")
    cut = text.index("\n", first) + 1          # between the line and its copy
    whole, joined = _ranges(tmp_path, data, [cut])
    tp = joined.tables["throughput"]
    lineno = text[:cut].count("\n") + 1      # the copy's line number
    row = tp[tp["lineno"] == lineno]
    assert len(row) == 1 and bool(row["repeat"].iloc[0]), row
    _same(whole, joined, f"cut at byte {cut}")
