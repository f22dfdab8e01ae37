"""Detection's one pass over a head (issue 32): every format's ``Spec.markers`` in one RE2
set, and the formats whose markers the head lacks left out when another is sure of it.

The answer must be the one of asking every format's sniff (the rule before the scan), for
every real file, fixture and bad-input case; and each format's markers must keep their
promise (a head without them scores below ``registry.COMPANION_SCORE``), or leaving the
format out could change an answer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import re2

from dptrace import registry
from dptrace.errors import UnknownFormatError
from dptrace.registry import COMPANION_SCORE, Parser, Spec
from dptrace.sources import Source

HERE = Path(__file__).resolve().parent
#: the fixtures, the bad-input corpus (near misses of every format), the fuzz corpus and
#: the real files of the shared folder (when this checkout has it beside it)
ROOTS = [HERE / "fixtures", HERE / "corpus", HERE / "fuzz-corpus",
         HERE.parent.parent / "shared" / "realdata"]


def _files() -> list[Path]:
    out: list[Path] = []
    for root in ROOTS:
        for dirpath, _, names in os.walk(root):
            out.extend(Path(dirpath, n) for n in sorted(names)
                       if Path(dirpath, n).is_file())
    return sorted(out)


FILES = _files()


def _answer(src: Source, head: bytes) -> list[str] | str:
    try:
        return [p.name for p in registry.detect_all(src, head)]
    except UnknownFormatError as exc:
        return f"unknown: {exc}"


def _every_sniff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Detection as before the scan: every format asked of every head."""
    monkeypatch.setattr(registry, "_marker_scan", lambda found: None)


def _sources() -> Iterator[tuple[Source, bytes]]:
    for path in FILES:
        src = Source(str(path), path)
        yield src, src.head()


def test_the_corpus_is_there() -> None:
    kinds = {p.relative_to(HERE).parts[0] for p in FILES if HERE in p.parents}
    assert {"fixtures", "corpus"} <= kinds
    assert len(FILES) > 300


def test_every_file_is_detected_as_when_every_format_is_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    heads = list(_sources())
    scanned = [_answer(src, head) for src, head in heads]
    with monkeypatch.context() as m:
        _every_sniff(m)
        asked = [_answer(src, head) for src, head in heads]
    differ = [(str(src.path), a, b) for (src, _), a, b in zip(heads, asked, scanned, strict=True)
              if a != b]
    assert differ == []
    # the scan is taken: most files are claimed by a sure format found by its markers
    assert sum(isinstance(a, list) for a in scanned) > len(scanned) // 2


@pytest.mark.parametrize("name", sorted(registry.parsers()))
def test_a_head_without_a_formats_markers_scores_below_a_companion(name: str) -> None:
    parser = registry.get(name)
    markers = [re2.compile(m) for m in parser.spec.markers]
    assert markers, f"{name} declares no markers: detection asks it of every head"
    unmarked = 0
    for src, head in _sources():
        if any(m.search(head) for m in markers):
            continue
        unmarked += 1
        assert parser.sniff(src, head) < COMPANION_SCORE, src.path
    assert unmarked > 100


def test_every_builtin_marker_is_in_the_set() -> None:
    scan = registry._marker_scan(registry.parsers())
    assert scan is not None
    assert scan.always == []
    assert sorted(set(scan.owner)) == sorted(registry.parsers())


MPITRACE = HERE / "fixtures" / "mpitrace"


def _rank_file() -> bytes:
    for path in sorted(MPITRACE.rglob("mpi_profile.*")):
        data = path.read_bytes()
        if b"Data for MPI rank" in data and len(data) < 60_000:
            return data
    raise AssertionError("no mpitrace rank file among the fixtures")


NCCL_TESTS = (b"# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5\n"
              b"#       size         count      type   redop    root     time   algbw   busbw\n"
              b"           8             2     float     sum      -1    10.21    0.00    0.00\n")


@pytest.mark.parametrize("extra, expected", [
    (b"", ["mpitrace"]),
    # an embeddable companion's markers in a sure format's head: asked, and chosen
    (NCCL_TESTS, ["mpitrace", "nccltests"]),
    (b"epoch 1 step 3 loss=2.31 12.5 samples/sec\n", ["mpitrace", "trainlog"]),
    (b"host1:1234:1234 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n",
     ["mpitrace", "nccl"]),
    # a near miss of a companion: its marker, not its lines; asked, and not chosen
    (b"NCCL version printed elsewhere\n# size and busbw columns\n", ["mpitrace"]),
])
def test_a_rank_file_with_other_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     extra: bytes, expected: list[str]) -> None:
    path = tmp_path / "mpi_profile.1.3"
    path.write_bytes(_rank_file() + extra)
    src = Source(str(path), path)
    assert _answer(src, src.head()) == expected
    _every_sniff(monkeypatch)
    assert _answer(src, src.head()) == expected


def _fake(name: str, score: float, markers: tuple[bytes, ...], calls: list[str]) -> Parser:
    def sniff(source: Source, head: bytes) -> float:
        calls.append(name)
        return score if head.startswith(b"ZZ") else 0.0
    return Parser(Spec(name, "a format made in a test", (), sniff, markers=markers))


def test_only_the_marked_formats_are_asked_when_one_is_sure(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    fakes = {"zzsure": _fake("zzsure", 0.95, (rb"ZZ",), calls),
             "zzother": _fake("zzother", 0.4, (rb"elsewhere",), calls),
             "zzalways": _fake("zzalways", 0.0, (), calls)}
    monkeypatch.setattr(registry, "_PARSERS", fakes)
    monkeypatch.setattr(registry, "_LOADED", True)
    path = tmp_path / "x.zz"
    path.write_bytes(b"ZZ rows\n")
    src = Source(str(path), path)
    assert _answer(src, src.head()) == ["zzsure"]
    assert sorted(calls) == ["zzalways", "zzsure"]   # no marker of zzother: not asked
    calls.clear()
    path.write_bytes(b"ZZ rows, and elsewhere\n")
    src = Source(str(path), path)
    assert _answer(src, src.head()) == ["zzsure"]
    assert sorted(calls) == ["zzalways", "zzother", "zzsure"]


def test_no_sure_format_asks_every_format(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    calls: list[str] = []
    fakes = {"zzweak": _fake("zzweak", 0.3, (rb"ZZ",), calls),
             "zzother": _fake("zzother", 0.2, (rb"elsewhere",), calls)}
    monkeypatch.setattr(registry, "_PARSERS", fakes)
    monkeypatch.setattr(registry, "_LOADED", True)
    path = tmp_path / "x.zz"
    path.write_bytes(b"ZZ rows\n")
    src = Source(str(path), path)
    assert _answer(src, src.head()) == ["zzweak"]
    assert sorted(calls) == ["zzother", "zzweak"]


def test_a_marker_re2_refuses_makes_its_format_always_asked(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    fakes = {"zzlook": _fake("zzlook", 0.95, (rb"(?<=Z)Z",), calls),   # no lookbehind in RE2
             "zzother": _fake("zzother", 0.3, (rb"elsewhere",), calls)}
    monkeypatch.setattr(registry, "_PARSERS", fakes)
    monkeypatch.setattr(registry, "_LOADED", True)
    scan = registry._marker_scan(registry.parsers())
    assert scan is not None and scan.always == ["zzlook"]
    path = tmp_path / "x.zz"
    path.write_bytes(b"ZZ rows, and elsewhere\n")
    src = Source(str(path), path)
    assert _answer(src, src.head()) == ["zzlook"]


def test_without_re2_every_format_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "re2", None)   # import re2 fails
    monkeypatch.setattr(registry, "_SCAN", ((), None))
    assert registry._marker_scan(registry.parsers()) is None
    path = next(MPITRACE.rglob("mpi_profile.*"))
    src = Source(str(path), path)
    assert _answer(src, src.head()) == ["mpitrace"]


def test_a_log_with_its_keywords_asks_only_the_marked_formats(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A training log with its keywords scores COMPANION_BELOW: the formats without markers
    in its head are not asked, and a companion whose lines come past the head (NCCL's, a
    Spec.deep format) is still found there."""
    lines = b"".join(b"epoch 1 step %d loss=2.31 12.5 samples/sec\n" % i for i in range(2000))
    nccl = b"host1:1234:1234 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
    path = tmp_path / "slurm-7.out"
    path.write_bytes(lines + nccl)
    src = Source(str(path), path)
    head = src.head()
    assert len(head) == 1 << 16 and nccl not in head
    asked: list[str] = []
    for name, parser in registry.parsers().items():
        spec = parser.spec

        def sniff(source: Source, text: bytes, _name: str = name, _f: object = spec.sniff,
                  ) -> float:
            asked.append(_name)
            return _f(source, text)  # type: ignore[operator]
        monkeypatch.setitem(registry._PARSERS, name,
                            Parser(Spec(**{**spec.__dict__, "sniff": sniff})))
    assert _answer(src, head) == ["trainlog", "nccl"]
    assert sorted(set(asked)) == ["nccl", "trainlog"]   # nccl: on the text past the head
    with monkeypatch.context() as m:
        _every_sniff(m)
        asked.clear()
        assert _answer(src, head) == ["trainlog", "nccl"]
        assert len(set(asked)) == len(registry.parsers())
