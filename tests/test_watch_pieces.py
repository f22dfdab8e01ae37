"""The incremental readers of ``dptrace watch`` (dptrace/watch/pieces.py): a log fed in
pieces of complete lines gives the tables, problems and variant of one read of the whole
file, on every real log of the repository and of ../shared/realdata; the line being
written, read up to its last ``\\r``, gives those of a file that ends there."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from dptrace.formats.nccl import read as nccl_read
from dptrace.formats.trainlog import read as trainlog_read
from dptrace.sources import expand
from dptrace.watch.follow import held_upto
from dptrace.watch.pieces import NcclState, TrainlogState

ROOT = Path(__file__).parent
REALDATA = ROOT.parent.parent / "shared" / "realdata"
_SKIP = (".tsv", ".py", ".sh", ".gz", ".bz2", ".xz", ".json", ".txt.md", ".zip")


def _logs() -> list[Path]:
    found = []
    for base in (REALDATA / "trainlog", REALDATA / "nccl", REALDATA / "perrank",
                 ROOT / "fixtures" / "trainlog", ROOT / "fixtures" / "nccl"):
        if base.is_dir():
            found += [p for p in sorted(base.rglob("*")) if p.is_file()
                      and not p.name.endswith(_SKIP) and p.name not in ("README.md",
                                                                        "versions.txt")]
    return found


LOGS = _logs()


def _whole(tmp_path: Path, data: bytes, name: str) -> tuple:
    """One read of ``data`` (a file that holds it) by both readers."""
    path = tmp_path / name
    path.write_bytes(data)
    src = expand([str(path)])[0][0]
    return trainlog_read.parse(src), nccl_read.parse(src), src.name


def _same(a, b, what: str) -> None:
    assert a.tables.keys() == b.tables.keys(), what
    for k in a.tables:
        pd.testing.assert_frame_equal(a.tables[k], b.tables[k], obj=f"{what}: {k}")
    assert [(p.source, p.line, p.severity, p.message) for p in a.problems] == \
        [(p.source, p.line, p.severity, p.message) for p in b.problems], what
    assert a.variant == b.variant, what


@pytest.mark.skipif(not LOGS, reason="no real logs")
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_pieces_of_complete_lines_equal_one_read(path: Path, tmp_path: Path) -> None:
    rng = random.Random(path.name)
    raw = path.read_bytes()
    data = raw[:raw.rfind(b"\n") + 1]
    whole_tl, whole_nc, name = _whole(tmp_path, data, "log")
    tl, nc = TrainlogState(name), NcclState(name)
    pos, fed = 0, 0
    while pos < len(data):
        cut = data.rfind(b"\n", pos, min(len(data), pos + rng.randint(1, 30_000)))
        if cut < 0:
            cut = data.find(b"\n", pos)
        for state in (tl, nc):
            state.feed(data[pos:cut + 1])
        pos, fed = cut + 1, fed + 1
        if rng.random() < 0.3:
            tl.result()   # a snapshot on the way compacts the parts: nothing changes
    _same(whole_tl, tl.result(), f"{path.name} trainlog ({fed} pieces)")
    _same(whole_nc, nc.result(), f"{path.name} nccl ({fed} pieces)")


def _cr_cuts(data: bytes) -> list[int]:
    """Positions inside lines that hold a ``\\r`` (a tqdm line being redrawn)."""
    out, at = [], data.find(b"\r")
    while at >= 0 and len(out) < 2000:
        out.append(at)
        at = data.find(b"\r", at + 1)
    return out


_TQDM = [p for p in LOGS if b"\r" in p.read_bytes()[:4_000_000]]


@pytest.mark.skipif(not _TQDM, reason="no log with tqdm redraws")
@pytest.mark.parametrize("path", _TQDM, ids=lambda p: p.name)
def test_line_being_redrawn_reads_as_the_file_ending_at_its_last_redraw(
        path: Path, tmp_path: Path) -> None:
    """A line cut anywhere in its redraws: the snapshot reads its complete updates (up to
    the last ``\\r``) as one read of a file that ends there, never a cut number."""
    rng = random.Random(path.name)
    data = path.read_bytes()
    cuts = _cr_cuts(data)
    for at in sorted(rng.sample(cuts, min(4, len(cuts)))):
        end = at + rng.randint(1, 40)          # mid-way through the next redraw
        line_start = data.rfind(b"\n", 0, at) + 1
        pending = data[line_start:end]
        held = pending[:held_upto(pending)]
        whole_tl, whole_nc, name = _whole(tmp_path, data[:line_start] + held, "log")
        tl, nc = TrainlogState(name), NcclState(name)
        for state in (tl, nc):
            state.feed(data[:line_start])
        _same(whole_tl, tl.result(held), f"{path.name} cut at {end}")
        _same(whole_nc, nc.result(held), f"{path.name} cut at {end} (nccl)")
        # the state is unchanged by the look at the tail: the line, once complete, reads
        nl = data.find(b"\n", at)
        if nl >= 0:
            tl.feed(data[line_start:nl + 1])
            whole_tl, _, _ = _whole(tmp_path, data[:nl + 1], "log")
            _same(whole_tl, tl.result(), f"{path.name} line completed at {nl}")
