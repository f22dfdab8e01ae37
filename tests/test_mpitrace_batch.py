"""Plain rank files converted together (``fast.Plain``) give exactly what the per-file path
gives: the same tables (rows, dtypes, category order), problems and sources."""

from __future__ import annotations

import gzip
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.formats.mpitrace import fast
from dptrace.formats.mpitrace import read as mpitrace
from dptrace.sources import Source

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
sys.path.insert(0, str(HERE))
import gen_mpitrace  # noqa: E402
from test_mpitrace_fast import _mutate, _swap_bins, _texts  # noqa: E402


def _per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send every file to the per-file path (fast.read or the scanner)."""
    monkeypatch.setattr(fast.Plain, "take", lambda self, data, rank=None: False)


def _same(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    assert sorted(a.tables) == sorted(b.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)
        for col in a[name].select_dtypes("category"):
            assert list(a[name][col].cat.categories) == list(b[name][col].cat.categories)
    pd.testing.assert_frame_equal(a.sources, b.sources, check_exact=True)
    pd.testing.assert_frame_equal(a.problems, b.problems, check_exact=True)


def _replace_line(path: Path, old: str, new: str, in_bins: bool = False) -> None:
    """Replace the first ``old`` (in the size distributions, with ``in_bins``)."""
    text = path.read_text()
    at = text.index("Message size distributions:") if in_bins else 0
    assert old in text[at:]
    path.write_text(text[:at] + text[at:].replace(old, new, 1))


def _odd_job(folder: Path) -> None:
    """A job whose files single out every case the batch hands to the per-file path."""
    gen_mpitrace.generate(folder, 24, job=5, seed=2)

    def p(rank: int) -> Path:
        return folder / f"mpi_profile.5.{rank}"

    p(3).write_text(_swap_bins(p(3).read_text()))                      # bins out of order
    _replace_line(p(4), " 45773 ", " 45770 ")                           # bins do not add up
    text = p(5).read_text()                                             # no bins for MPI_Gather
    head, _, rest = text.partition("MPI_Gather                #calls")
    p(5).write_text(head + rest.split("\n", 2)[2])
    _replace_line(p(6), "MPI_Gatherv", "MPI_Bcast  ")                   # a routine listed twice
    _replace_line(p(7), "         4.0   ", " 9999999999999999.0   ", in_bins=True)  # huge
    p(8).rename(folder / "mpi_profile.5.80")                            # name says another rank
    _replace_line(p(9), "MPI_Bcast", "MPI_B\u00e9cast")                 # not ASCII
    p(10).with_name("mpi_profile.5.10.gz").write_bytes(gzip.compress(p(10).read_bytes()))
    p(10).unlink()
    _replace_line(p(11), "total elapsed", "exclusive elapsed time = 1.0 seconds.\ntotal elapsed")
    _replace_line(p(12), "MiB.\n", "KBytes.\n")                        # KBytes: per-file path
    _replace_line(p(13), "Data for MPI rank 13 of 24:", "Data for MPI rank 13 of 24: "
                  "(all communicators)")
    p(14).write_text(p(14).read_text().rstrip("\n"))                    # last line cut
    _replace_line(p(15), "MPI_Init()", "MPI_Pcontrol(1)")
    _replace_line(p(15), "MPI_Finalize()", "MPI_Pcontrol(0)")


def test_batch_gives_what_each_file_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          ) -> None:
    _odd_job(tmp_path / "odd")
    shutil.copytree(HERE / "fixtures" / "mpitrace", tmp_path / "real")
    gen_mpitrace.generate(tmp_path / "plain", 40, job=6, seed=3)
    taken = []
    take = fast.Plain.take

    def spy(self: fast.Plain, data: bytes, rank: int | None = None) -> bool:
        taken.append(took := take(self, data, rank))
        return took

    singled: list[str] = []
    one = mpitrace._Many.one

    def one_spy(self: mpitrace._Many, src: Source, data: bytes, mine: list) -> None:
        singled.append(src.path.name)
        one(self, src, data, mine)

    monkeypatch.setattr(fast.Plain, "take", spy)
    monkeypatch.setattr(mpitrace._Many, "one", one_spy)
    batch = [dptrace.load(tmp_path), dptrace.read_mpitrace(tmp_path)]
    assert sum(taken) >= 2 * 60
    # taken, then singled out by the checks (plus the files take declined)
    assert {f"mpi_profile.5.{r}" for r in range(3, 8)} <= set(singled)
    assert "mpi_profile.5.2" not in singled
    monkeypatch.undo()
    _per_file(monkeypatch)
    for got, want in zip(batch, [dptrace.load(tmp_path), dptrace.read_mpitrace(tmp_path)],
                         strict=True):
        _same(got, want)
    problems = batch[0].problems
    assert problems["source"].str.contains("mpi_profile.5.").sum() >= 5


def test_batches_and_runs_between_other_files(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches, cut by full batches and by files that take the per-file path."""
    gen_mpitrace.generate(tmp_path, 30, job=8, seed=4)
    rng = random.Random(5)
    for path in rng.sample(sorted(tmp_path.iterdir()), 8):
        path.write_text(_mutate(rng, path.read_text()))
    monkeypatch.setattr(mpitrace, "BATCH", 4)
    got = dptrace.read_mpitrace(tmp_path)
    _per_file(monkeypatch)
    _same(got, dptrace.read_mpitrace(tmp_path))


def test_plain_columns_are_the_blocks_numbers(tmp_path: Path) -> None:
    gen_mpitrace.generate(tmp_path, 6)
    texts = [t for _, t in _texts()] + [p.read_text() for p in sorted(tmp_path.iterdir())]
    rng = random.Random(1)
    texts += [_mutate(rng, rng.choice(texts)) for _ in range(300)]
    plain, blocks = fast.Plain(), []
    for text in texts:
        if plain.take(text.encode("utf-8")):
            block = fast.read(text)
            assert block is not None   # the plain layout is part of the fast path's
            blocks.append(block)
    assert len(blocks) >= 5
    c = plain.columns()
    routines = [r for b in blocks for r in b.routines]
    assert c.routine_name == [r[0] for r in routines]
    assert c.routine.tolist() == [list(r[1:]) for r in routines]
    messages = [m for b in blocks for m in b.messages]
    assert c.message.tolist() == [list(m[1:]) for m in messages]
    assert np.repeat(c.heading_name, c.bin_rows).tolist() == [m[0] for m in messages]
    assert c.rank.tolist() == [b.rank for b in blocks]
    own = ["total communication time", "total elapsed time", "user cpu time", "system time",
           "max_rss_mib"]
    assert c.totals.tolist() == [[b.own[k] for k in own] for b in blocks]
    assert c.roles == ["+".join(b.roles) or None for b in blocks]
    assert c.unit == [b.mem_unit for b in blocks]


def test_plain_declines_rank_zero_and_other_ranks(tmp_path: Path) -> None:
    gen_mpitrace.generate(tmp_path, 3)
    plain = fast.Plain()
    assert not plain.take((tmp_path / "mpi_profile.424242.0").read_bytes())
    one = (tmp_path / "mpi_profile.424242.1").read_bytes()
    assert not plain.take(one, rank=2)
    assert plain.take(one, rank=1) and plain.take(one) and len(plain) == 2


@pytest.mark.parametrize("avg", [0.0, 0.5, 1.0, 4.0, 4.1, 5.0, 8.0, 8.05, 16.0, 16.5, 1023.9,
                                 1024.0, 1024.1, 2.0 ** 40, 2.0 ** 52 + 1, 3e15])
def test_bins_at_once_are_bin_of(avg: float) -> None:
    k, lo, hi = mpitrace._bins(np.array([avg, 8.0]))
    assert (k[0], lo[0], hi[0]) == tuple(map(float, mpitrace.bin_of(avg)))


def test_size_is_known_once_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc\n")
    src = Source(str(path), path)
    assert src.read_all() == b"abc\n" and src.size() == 4
    path.write_bytes(b"longer\n")
    assert src.size() == 4          # the size of what was read
    assert Source(str(path), path).size() == 7


def test_a_failing_batch_falls_back_to_each_file(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    gen_mpitrace.generate(tmp_path, 6, job=3)
    _per_file(monkeypatch)
    want = dptrace.read_mpitrace(tmp_path)
    monkeypatch.undo()

    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(mpitrace, "_plain_tables", broken)
    _same(dptrace.read_mpitrace(tmp_path), want)
