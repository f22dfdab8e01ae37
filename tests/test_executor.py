"""The executor seam: results of forked pieces come back whole, large ones through shared
memory (dptrace.executor._Ship), in order, writable, with nothing left behind."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pandas as pd
import pytest

from dptrace import executor
from dptrace.executor import Processes, Serial

pytestmark = pytest.mark.skipif(not executor.can_fork(), reason="needs fork")


def _piece(k: int) -> tuple[int, pd.DataFrame, np.ndarray]:
    n = 140_000 + 10_000 * k   # 1.1 MB and more of int64: over SHIP_BYTES
    df = pd.DataFrame({
        "i": np.arange(n, dtype=np.int64) + k,
        "x": np.linspace(0, 1, n),
        "cat": pd.Categorical.from_codes(np.arange(n) % 3, categories=["a", "b", "c"]),
        "s": pd.array([f"r{k}"] * 3 + [None] * (n - 3), dtype="string"),
        "n": pd.array([1, None] * (n // 2), dtype="Int64"),
    })
    return k, df, np.full(7, k, dtype=np.int32)   # a small array rides in the pickle


def _small(k: int) -> list[int]:
    return [k] * 3


@pytest.fixture
def shm(monkeypatch, tmp_path):
    """A shared-memory directory of this test's own (other tests may map at the same time
    in /dev/shm); on tmpfs like /dev/shm when this machine has one."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
        else str(tmp_path)
    with tempfile.TemporaryDirectory(prefix="dptrace-test-", dir=base) as where:
        monkeypatch.setattr(executor, "_SHM", where)
        yield where


def _left(where: str) -> list[str]:
    return os.listdir(where)


def test_large_results_come_back_equal_in_order_and_writable(shm) -> None:
    got = list(Processes(2).map(_piece, range(4)))
    want = list(Serial().map(_piece, range(4)))
    assert [g[0] for g in got] == list(range(4))
    for (k, df, arr), (_, wdf, warr) in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(df, wdf)
        np.testing.assert_array_equal(arr, warr)
        df["i"] += 1   # the readers shift line numbers in place
        assert df["i"].iloc[0] == k + 1
    assert _left(shm) == []   # files and the map's directory are gone


def test_a_shipped_piece_writes_its_buffers_to_shared_memory(tmp_path) -> None:
    shipped = executor._Ship(_piece, str(tmp_path))(1)
    assert isinstance(shipped, executor._Shipped)
    assert sum(os.path.getsize(p) for p in shipped.paths) >= executor.SHIP_BYTES
    k, df, _ = executor._landed(shipped)
    assert k == 1 and len(df) == 150_000
    assert not any(os.path.exists(p) for p in shipped.paths)   # removed once mapped
    pd.testing.assert_frame_equal(df, _piece(1)[1])


def _medium(k: int) -> np.ndarray:
    return np.full(20_000, k, dtype=np.int64)   # 160 KB: out of band, under SHIP_BYTES


def test_small_results_go_by_the_pipe(tmp_path) -> None:
    """Small results come back in the pool's pipe, pickled once (in the worker, with their
    buffers beside the pickle); their arrays are writable."""
    shipped = executor._Ship(_small, str(tmp_path))(2)
    assert shipped.paths == () and executor._landed(shipped) == [2, 2, 2]
    shipped = executor._Ship(_medium, str(tmp_path))(3)
    assert shipped.paths == () and len(shipped.inline) == 1
    arr = executor._landed(shipped)
    arr += 1
    assert arr.tolist() == [4] * 20_000
    assert list(tmp_path.iterdir()) == []
    assert list(Processes(2).map(_small, range(4))) == [[k] * 3 for k in range(4)]
    assert [a[0] for a in Processes(2).map(_medium, range(3))] == [0, 1, 2]


def test_without_shared_memory_results_come_by_the_pipe(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(executor, "_SHM", str(tmp_path / "missing"))
    got = list(Processes(2).map(_piece, range(2)))
    pd.testing.assert_frame_equal(got[1][1], _piece(1)[1])


def test_a_failing_piece_raises_and_leaves_nothing(shm) -> None:
    with pytest.raises(ZeroDivisionError):
        list(Processes(2).map(_fail_on_two, range(4)))
    assert _left(shm) == []


def _fail_on_two(k: int) -> pd.DataFrame:
    if k == 2:
        raise ZeroDivisionError("piece 2")
    return _piece(k)[1]


def test_work_started_beside_the_caller_comes_back_when_asked(shm) -> None:
    """``start`` begins a piece in a process of its own at once (the caller goes on with its
    own work) and gives it back when asked, shipped as map's are; Serial runs it when asked;
    a failure raises when the result is asked for, and nothing is left behind."""
    wait = Processes(2).start(_piece, 3)
    k, df, arr = wait()
    assert k == 3
    pd.testing.assert_frame_equal(df, _piece(3)[1])
    df["i"] += 1   # writable
    assert _left(shm) == []
    assert Serial().start(_small, 4)() == [4, 4, 4]
    pid = Processes(2).start(_pid, 0)()
    assert pid != os.getpid()   # another process
    failing = Processes(2).start(_fail_on_two, 2)
    with pytest.raises(ZeroDivisionError):
        failing()
    assert _left(shm) == []


def _pid(_: int) -> int:
    return os.getpid()
