"""The executor seam is portable (issue 33 §3): the pieces a reader splits a large input
into are self-contained (path and bounds, picklable), so ``load(path, executor=X)`` works
for any X with ``workers`` and ``map``, not only for the forked pool: here a
``ProcessPoolExecutor`` with the *spawn* start method, whose workers inherit nothing and
map the file by its path. Its tables equal Serial's on inputs split into several pieces
(the split thresholds lowered for the test), and a compressed input (content that exists
only in the reading process) is read in-process, with the same tables."""

from __future__ import annotations

import gzip
import multiprocessing as mp
import shutil
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dptrace
from dptrace import executor
from dptrace.formats.nccl import read as nccl_read
from dptrace.formats.trainlog import read as trainlog_read

FIXTURES = Path(__file__).parent / "fixtures"
#: a DeepSpeed-Chat log of 220 KB (1,046 throughput and 1,431 metric rows): several
#: pieces at 32 KB
TRAINLOG = FIXTURES / "trainlog" / "dschat_step3_opt1.3b_critic350m_gbs64.log"
#: a real NCCL INFO log of 78 KB (Polaris, 2 nodes): several pieces at 16 KB
NCCL = FIXTURES / "nccl" / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log"


class Spawned:
    """The Executor protocol on a spawn-based pool: nothing is inherited by the workers,
    every piece and result is pickled. Counts the pieces it ran."""

    def __init__(self, workers: int = 2) -> None:
        self._workers = workers
        self.pieces = 0

    @property
    def workers(self) -> int:
        return self._workers

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        items = list(items)
        self.pieces += len(items)
        with ProcessPoolExecutor(self._workers, mp_context=mp.get_context("spawn")) as pool:
            yield from pool.map(fn, items)


@pytest.fixture(scope="module")
def spawned() -> Spawned:
    return Spawned(2)


def _assert_same(got: dptrace.Dataset, want: dptrace.Dataset) -> None:
    assert sorted(got.tables) == sorted(want.tables)
    for name in want.tables:
        pd.testing.assert_frame_equal(got[name], want[name], obj=name)
    pd.testing.assert_frame_equal(got.sources, want.sources)
    pd.testing.assert_frame_equal(got.problems, want.problems)
    pd.testing.assert_frame_equal(got.runs, want.runs)


def test_trainlog_split_on_spawned_workers_equals_serial(monkeypatch, spawned) -> None:
    want = dptrace.load(str(TRAINLOG), executor="serial")
    monkeypatch.setattr(trainlog_read, "PARALLEL_BYTES", 32 << 10)
    monkeypatch.setattr(trainlog_read, "RANGE_BYTES", 32 << 10)
    before = spawned.pieces
    got = dptrace.load(str(TRAINLOG), executor=spawned)
    assert spawned.pieces - before >= 8   # 220 KB in ranges of about 32 KB
    assert len(want["throughput"]) > 1000
    _assert_same(got, want)


def test_nccl_split_on_spawned_workers_equals_serial(monkeypatch, spawned) -> None:
    want = dptrace.load(str(NCCL), executor="serial")
    monkeypatch.setattr(nccl_read, "PARALLEL_BYTES", 16 << 10)
    before = spawned.pieces
    got = dptrace.load(str(NCCL), executor=spawned)
    assert spawned.pieces - before == spawned.workers
    assert len(want["nccl_setup"]) > 0
    _assert_same(got, want)


def test_compressed_input_is_read_in_process_on_a_spawned_executor(
        monkeypatch, spawned, tmp_path) -> None:
    """A .gz input's content exists only in this process (an unlinked temporary file): no
    piece of it goes to a spawned worker; it is read here, with the same tables."""
    gz = tmp_path / TRAINLOG.name
    gz = gz.with_name(gz.name + ".gz")
    with open(TRAINLOG, "rb") as src, gzip.open(gz, "wb") as out:
        shutil.copyfileobj(src, out)
    want = dptrace.load(str(gz), executor="serial")
    monkeypatch.setattr(trainlog_read, "PARALLEL_BYTES", 32 << 10)
    monkeypatch.setattr(trainlog_read, "RANGE_BYTES", 32 << 10)
    before = spawned.pieces
    got = dptrace.load(str(gz), executor=spawned)
    assert spawned.pieces == before
    _assert_same(got, want)


def test_a_piece_maps_its_file_by_path_without_the_parents_buffer() -> None:
    """A piece run in a process that holds no buffer (here: this one, none held) maps
    the file itself: the same rows as the range scanned in the parent's buffer."""
    path = str(TRAINLOG)
    n = TRAINLOG.stat().st_size
    piece = trainlog_read._Piece(path, TRAINLOG.name, True, 0, n, True, False)
    assert trainlog_read._FORKED is None
    tp, tm, _, newlines, _ = trainlog_read._scan_piece(piece)
    data = TRAINLOG.read_bytes()
    want = trainlog_read._scan_range(data, TRAINLOG.name, 0, n, True)
    pd.testing.assert_frame_equal(tp, want[0])
    pd.testing.assert_frame_equal(tm, want[1])
    assert newlines == want[3]


@pytest.mark.skipif(not executor.can_fork(), reason="needs fork")
def test_forked_pool_still_reads_the_inherited_buffer(monkeypatch) -> None:
    """The forked pool's pieces read the parent's buffer (nothing mapped again): with the
    path made unopenable after the split is decided, the forked read still equals Serial's."""
    want = dptrace.load(str(TRAINLOG), executor="serial")
    monkeypatch.setattr(trainlog_read, "PARALLEL_BYTES", 32 << 10)
    monkeypatch.setattr(trainlog_read, "RANGE_BYTES", 32 << 10)
    monkeypatch.setattr(trainlog_read, "_piece_path", lambda src: str(src.path) + ".absent")
    got = dptrace.load(str(TRAINLOG), executor=executor.Processes(2))
    _assert_same(got, want)
