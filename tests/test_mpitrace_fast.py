"""The fast path gives exactly the scanner's block, or declines (then the scanner runs)."""

from __future__ import annotations

import contextlib
import random
import sys
from pathlib import Path

import pytest

from dptrace.errors import Problem
from dptrace.formats.mpitrace import fast
from dptrace.formats.mpitrace import general as scan

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
import gen_mpitrace  # noqa: E402

REAL = sorted(p for d in (HERE / "fixtures" / "mpitrace", HERE.parent.parent / "shared" /
                          "realdata" / "mpitrace") if d.is_dir()
              for p in d.rglob("*") if p.is_file())


def _texts() -> list[tuple[str, str]]:
    out = []
    for p in REAL:
        with contextlib.suppress(UnicodeDecodeError):
            out.append((p.name, p.read_text(encoding="utf-8")))
    return out


def _same_as_scanner(text: str) -> bool:
    """Assert the fast path agrees with the scanner; True when it took the text."""
    got = fast.read(text)
    if got is None:
        return False
    problems: list[Problem] = []
    blocks = scan.Scanner(text, "x", problems).run()
    assert problems == []
    assert blocks == [got]
    return True


def test_real_and_generated_files_agree(tmp_path: Path) -> None:
    gen_mpitrace.generate(tmp_path, 40)
    texts = _texts() + [(p.name, p.read_text()) for p in tmp_path.iterdir()]
    taken = sum(_same_as_scanner(t) for _, t in texts)
    assert taken >= 40   # every generated non-zero rank, and the plain real files


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    kind = rng.randrange(8)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif kind == 2:
        lines[i] = "  " + lines[i] + " "
    elif kind == 3 and lines[i]:
        j = rng.randrange(len(lines[i]))
        lines[i] = lines[i][:j] + rng.choice("-x9. >\t\r:e") + lines[i][j + 1:]
    elif kind == 4:
        return text[: rng.randrange(len(text) + 1)]
    elif kind == 5:
        lines.insert(i, rng.choice(["", "...", "```", "----", "> x", "Summary for all tasks:",
                                    "MPI task 3 of 8 had the maximum communication time.",
                                    "aggregate memory = 5 MB", "                 4  8.0  1.0"]))
    elif kind == 6:
        lines[i] = lines[i].replace(" ", "  ", 1)
    else:
        lines[i] = lines[i].upper()
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_files_agree_or_decline(tmp_path: Path, seed: int) -> None:
    gen_mpitrace.generate(tmp_path, 4)
    bases = [t for _, t in _texts() if fast.read(t)] + [p.read_text() for p in tmp_path.iterdir()]
    rng = random.Random(seed)
    for _ in range(400):
        text = rng.choice(bases)
        for _ in range(rng.randrange(1, 3)):
            text = _mutate(rng, text)
        _same_as_scanner(text)


def _swap_bins(text: str) -> str:
    """Swap two bin rows of the Allreduce distribution (bins out of order)."""
    lines = text.split("\n")
    head = next(i for i, x in enumerate(lines) if x.startswith("MPI_Allreduce") and "#calls" in x)
    lines[head + 2], lines[head + 3] = lines[head + 3], lines[head + 2]
    return "\n".join(lines)


def test_fast_path_files_report_like_the_scanner(tmp_path: Path) -> None:
    """Bins out of order and bins that do not add up: the same problems, with line numbers,
    whether a file takes the fast path or the scanner (a space after the 'Data for' line's
    colon sends it there)."""
    import dptrace

    gen = tmp_path / "gen"
    gen_mpitrace.generate(gen, 4)
    text = (gen / "mpi_profile.424242.1").read_text()
    bad = _swap_bins(text).replace(" 45773 ", " 45770 ")
    slow = bad.replace(":\n", ": \n", 1)
    assert fast.read(bad) is not None and fast.read(slow) is None
    found = []
    for name, content in (("fast", bad), ("slow", slow)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "mpi_profile.424242.1").write_text(content)
        ds = dptrace.load(tmp_path / name)
        alone = dptrace.load(tmp_path / name / "mpi_profile.424242.1").problems
        assert ds.problems.drop(columns="run").equals(alone.drop(columns="run"))
        found.append(ds.problems.drop(columns=["run", "source"]))
        for table in ds.tables:
            assert len(ds[table])
    msgs = list(found[0]["message"])
    assert any("MPI_Allreduce: size bins out of order" in m for m in msgs)
    assert any("bins of MPI_Allreduce add up to 47,105 calls" in m for m in msgs)
    assert found[0]["line"].notna().all()
    assert found[0].equals(found[1])


def test_head_is_reused_by_the_parser_and_forgotten(tmp_path: Path) -> None:
    from dptrace.sources import HEAD_BYTES, Source

    small = tmp_path / "small"
    small.write_bytes(b"abc\n")
    src = Source(str(small), small)
    assert src.head() == b"abc\n"
    small.write_bytes(b"changed\n")
    assert src.read_all() == b"abc\n"        # the bytes detection saw, read once
    assert src.read_all() == b"changed\n"    # then read again
    src.head()
    src.forget()
    assert src.read_all() == b"changed\n"
    big = tmp_path / "big"
    big.write_bytes(b"x" * (HEAD_BYTES + 1))
    src = Source(str(big), big)
    assert len(src.head()) == HEAD_BYTES
    assert len(src.read_all()) == HEAD_BYTES + 1
    assert src == Source(str(big), big) and hash(src) == hash(Source(str(big), big))


def test_looks_binary_answers_for_each_head() -> None:
    from dptrace.registry import looks_binary

    text, binary = b"hello\n" * 10, bytes(range(256)) * 4
    assert [looks_binary(h) for h in (text, text, binary, binary, text, b"", b"\0")] == \
        [False, False, True, True, False, False, True]
    buf = bytearray(b"hello")
    assert not looks_binary(buf)
    buf[0] = 0
    assert looks_binary(buf)
