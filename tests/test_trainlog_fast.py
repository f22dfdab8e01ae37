"""The C reader of tqdm lines (``dptrace/formats/trainlog/_tqdm_fast.c``, the trainlog
format's fast engine) against the Python one (its general engine).

``general._tqdm_updates`` (with ``_Scanner._decode`` and ``_split_prefix`` before it) is
the reference. The C functions must add exactly its rows, or add nothing and decline (then
the Python code runs). Checked on every real log (test_engines.py), on the 300 MB benchmark file when it is
there, and on many thousands of generated and mutated tqdm lines.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dptrace
from dptrace.formats.trainlog import fast as trainlog_fast
from dptrace.formats.trainlog import general as trainlog
from dptrace.formats.trainlog import rules

HERE = Path(__file__).parent
BENCH = HERE.parent / "benchmarks" / ".data" / "trainlog_300mb_64i_seed0.out"

try:
    from dptrace.formats.trainlog import _tqdm_fast  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a compiler
    _tqdm_fast = None

needs_c = pytest.mark.skipif(_tqdm_fast is None, reason="the C extension is not built")


def _module() -> Any:
    """The configured C module (also when DPTRACE_PURE_PYTHON kept trainlog from it)."""
    assert _tqdm_fast is not None
    if trainlog_fast._FAST is None:
        trainlog_fast.configure_fast(_tqdm_fast)
    return _tqdm_fast


def _fast() -> object:
    return _module().cr_line


def _same(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    for table in ("throughput", "train_metrics"):
        pd.testing.assert_frame_equal(a[table], b[table], check_exact=True)
        # bit for bit: assert_frame_equal takes -0.0 for 0.0
        assert repr(a[table].to_dict("list")) == repr(b[table].to_dict("list"))
    assert repr(a.problems) == repr(b.problems)


def _engines_agree(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """engine="fast" (the C reader, also when DPTRACE_PURE_PYTHON kept trainlog from it)
    gives what engine="general" gives."""
    if trainlog_fast._FAST is None:
        monkeypatch.setattr(trainlog_fast, "_FAST", _fast())
    _same(dptrace.read_trainlog(path, engine="fast"),
          dptrace.read_trainlog(path, engine="general"))


# the real logs: test_engines.py (every format's engines on every real file)


@needs_c
def test_benchmark_log_same_rows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the 300 MB benchmark log when a run kept it, else a 20 MB one from the same generator
    path = BENCH
    if not path.exists():
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        import gen_trainlog

        path = tmp_path / "slurm-20mb.out"
        gen_trainlog.generate(path, 20)
    _engines_agree(path, monkeypatch)


def _agree(c: tuple[Any, list[Any], list[Any]], py: tuple[Any, list[Any], list[Any]],
           where: tuple[Any, ...]) -> bool:
    """Check one line's effect in C against Python's: when C accepts (True), Python
    accepts with the very same rows; else C declined (False) and added nothing."""
    (got, tp, tm), (want, want_tp, want_tm) = c, py
    if got is True:
        assert want is True, where
        assert repr(tp) == repr(want_tp), where
        assert repr(tm) == repr(want_tm), where
        return True
    assert got is False, (*where, got)
    assert tp == [] and tm == [], where
    return False


# --- generated lines ---------------------------------------------------------------------------

PREFIXES = ["", " 3: ", "12: ", "[1,2]<stdout>:", "[0,15]<stderr>:", "[default0]:",
            "[worker1]:", "[3] ", "  7: ", "\t"]
DESCS = ["", "Training", "Training: ", "Epoch 3: ", "Epoch 12/100 ", "eval", "Iteration",
         "Validating:", "100%|", "[INFO] Train", "loss 0.5 ", "it/s: ", "12 ", "x" * 250,
         "Step 4 of 9: ", "Data: "]
BLOCKS = " ▏▎▍▌▋▊▉█#"
UNITS = ["it", "s", "B", "samples", "img", "tok", "batch", "steps", "ex", "a_b",
         "x" * 29, "y" * 31, "k", "M", "ks"]
SCALES = ["", "", "", "k", "M", "G", "T"]
PERS = ["s", "s", "s", "it", "step", "sec", "batch", "s" * 31]
MUTATE = "0123456789.,:/?<>[] \t\r=kMGTsie+-_ab%|█٣²\u00b9\x00]"


def _num(rng: random.Random, wild: bool) -> str:
    kind = rng.random() if wild else rng.random() * 0.6
    if kind < 0.5:
        return f"{rng.uniform(0, 100):.{rng.randint(0, 4)}f}"
    if kind < 0.6:
        return str(rng.randint(0, 10**rng.randint(1, 22)))
    if kind < 0.7:
        return f"{rng.uniform(0, 1e6):.3e}"
    if kind < 0.8:
        return rng.choice(["0", "0.00", "-0", "+1.5", ".5", "5.", "5.e3", "1e400", "1e-400",
                           "1e", "1.5E+3", "-2", "00012", "0.1e-2"])
    return rng.choice(["?", "nan", "inf", "1_0", "1..2", "-.", "."])


def _count(rng: random.Random, wild: bool) -> str:
    kind = rng.random() if wild else rng.random() * 0.8
    if kind < 0.7:
        n = str(rng.randint(0, 10**rng.randint(1, 6)))
    elif kind < 0.8:
        n = f"{rng.uniform(0, 100):.{rng.randint(1, 2)}f}{rng.choice('kMGT')}"
    elif kind < 0.9:
        n = rng.choice(["1.5k", "12k", "3M", "0.5", "1e3", "9" * 20, "9" * 18, "1.", "007"])
    else:
        n = rng.choice(["?", "", "x", "1/2", "5k/10k"])
    if not wild:
        return n + rng.choice(["", "/1000", "/16", "/?", "/1.5k", "/12M"])
    total = rng.choice(["", "/1000", "/16", "/?", "/1.5k", "/", "/x", "/12M"])
    return n + total + rng.choice(["", "", "", "it", "samples", "B", "a" * 21])


def _update(rng: random.Random) -> str:
    """One tqdm update; one in four is wild (any of the odd choices)."""
    wild = rng.random() < 0.25
    desc = rng.choice(DESCS)
    if rng.random() < 0.6:
        pct = rng.randint(0, 100)
        width = rng.randint(0, 12)
        bar = "".join(rng.choice(BLOCKS) for _ in range(width))
        desc += f"{pct:3d}%|{bar}| "
    elapsed = rng.choice(["00:01", "0", "1:02:03", "00:00"] + ["x", ""] * wild)
    left = rng.choice(["", "<00:02", "<?", "<1:?:2"] + ["<"] * wild)
    rate = _num(rng, wild)
    sep = rng.choice([", ", ",", ",  ", ", \t"] + [" , "] * wild)
    unit = rng.choice(SCALES) + rng.choice(UNITS[:10] if not wild else UNITS)
    per = rng.choice(PERS[:-1] if not wild else PERS)
    if rng.random() < 0.1:  # seconds per unit
        unit, per = "s", rng.choice(["it", "step", "img"])
    post = ""
    if rng.random() < 0.3:
        pairs = [f"{rng.choice(['loss', 'lr', 'acc', 'v_num', 'Loss X', 'a1'])}="
                 f"{_num(rng, wild)}" for _ in range(rng.randint(1, 3))]
        post = ", " + ", ".join(pairs)
        if wild and rng.random() < 0.3:
            post += rng.choice([", x=abc", " ", "=", ", ]", ", ="])
    if wild and rng.random() < 0.1:
        post += "p" * rng.choice([490, 499, 500, 501, 530])
    blank = rng.choice(["", " ", "  ", "\t"])
    tail = rng.choice(["", "", "", " done", "]", " [extra]", "\x1b"])
    return (f"{rng.choice(PREFIXES) if rng.random() < 0.3 else ''}{desc}{_count(rng, wild)}"
            f"{blank}[{elapsed}{left}{sep}{rate}{rng.choice(['', ' ', '  '])}{unit}/{per}"
            f"{post}]{tail}")


def _line(rng: random.Random) -> str:
    parts = [_update(rng) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        parts.insert(rng.randint(0, len(parts)), "")
    head = rng.choice(["", "", " 3: ", "[1,2]<stdout>:", "plain text ", "loss: 3",
                       "samples/sec", "[x]", "12: ", "1 it/s]"])
    text = head + "\r" + "\r".join(parts) if rng.random() < 0.5 else "\r".join(parts)
    if rng.random() < 0.2:
        text += "\r"
    for _ in range(rng.choice([0, 0, 0, 0, 0, 1, 1, 2, 5])):
        i = rng.randrange(len(text) + 1)
        op = rng.random()
        if op < 0.4:
            text = text[:i] + rng.choice(MUTATE) + text[i + 1:]
        elif op < 0.7:
            text = text[:i] + rng.choice(MUTATE) + text[i:]
        else:
            text = text[:i] + text[i + 1:]
    return text


def _effect(func: object, *args: object) -> tuple[object, list[object], list[object]]:
    """func(*args, rows): its result (or its exception's type) and the rows it added."""
    rows = rules.Rows()
    try:
        result: object = func(*args, rows)  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - the Python reference may raise: compared
        result = type(exc)
    return result, rows.tp, rows.tm


@needs_c
def test_generated_lines_same_rows() -> None:
    fast = _module().tqdm_updates
    rng = random.Random(20261123)
    accepted = python_rows = declined_python_ok = 0
    for k in range(50_000):
        text = _line(rng)
        prefix = rng.choice([None, "3", "0"])
        start = rng.choice([0, 1, 1 << 33])
        got, tp, tm = _effect(fast, text, prefix, 7, start)
        want, want_tp, want_tm = _effect(trainlog._tqdm_updates, text, prefix, 7, start)
        if _agree((got, tp, tm), (want, want_tp, want_tm), (k, text)):
            accepted += 1
            python_rows += bool(want_tp)
        else:
            declined_python_ok += want is True
    # about a third of the lines are whole tqdm updates (Python accepts them); the C path
    # must not reach equality by declining: it declines only Unicode numbers (the mutations
    # put some in) and counts of more than 18 digits
    assert accepted > 13_000
    assert python_rows > 11_000
    assert declined_python_ok < 0.05 * accepted


def _python_line(raw: bytes, whole_start: bool, line: int, start: int,
                 rows: rules.Rows) -> bool:
    """What ``_Scanner._cr_line`` does before its segment-by-segment reading."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False  # the C path must decline: _decode records the bad bytes
    if "\x1b" in text or "<std" in text:
        return False  # ANSI escapes are stripped by _decode; tags are read segment by segment
    line_prefix = trainlog._split_prefix(text)[0] if whole_start else None
    return trainlog._tqdm_updates(text, line_prefix, line, start, rows)


@needs_c
def test_generated_raw_lines_same_rows() -> None:
    """cr_line: the same, from the bytes (launcher prefixes, bad UTF-8, ANSI escapes)."""
    fast = _module().cr_line
    rng = random.Random(7)
    accepted = python_ok = 0
    for k in range(20_000):
        text = _line(rng)
        if rng.random() < 0.5:
            text = rng.choice(PREFIXES + ["63: ", "1234567: ", "[12345678] ", "[3]\u2003",
                                          "\u00a0 3: ", "[a1]:", "[_9]:", "[ab]:", "[1,2]<stdin>:",
                                          "[1,]<stdout>:", "3:", " [4]\t", "[4]"]) + text
        raw = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.05:
            i = rng.randrange(len(raw) + 1)
            raw = raw[:i] + rng.choice([b"\xff", b"\xe2\x96", b"\x1b[0m", b"\xc3"]) + raw[i:]
        whole = rng.random() < 0.8
        start = rng.choice([0, 5, 1 << 33])
        got, tp, tm = _effect(fast, raw, whole, 7, start)
        want, want_tp, want_tm = _effect(_python_line, raw, whole, 7, start)
        python_ok += want is True
        accepted += _agree((got, tp, tm), (want, want_tp, want_tm), (k, raw))
    assert accepted > 2_500
    assert accepted > 0.95 * python_ok


#: UTF-8 at the edges of what Python's strict decoder takes (the C reader decodes a line's
#: bytes itself): the first and last valid sequences of each length and each special lead
#: byte, and what it refuses: overlong forms, surrogates, beyond U+10FFFF, stray or missing
#: continuation bytes, bytes that never start one
UTF8_EDGES = [b"\xc2\x80", b"\xdf\xbf", b"\xc3\xa9", b"\xe0\xa0\x80", b"\xe1\x80\x80",
              b"\xec\xbf\xbf", b"\xed\x80\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
              b"\xf0\x90\x80\x80", b"\xf1\x80\x80\x80", b"\xf3\xbf\xbf\xbf", b"\xf4\x80\x80\x80",
              b"\xf4\x8f\xbf\xbf", b"\xe2\x96\x88", b"\xf0\x9f\x94\xa5",
              b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
              b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
              b"\xf5\x80\x80\x80", b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc3", b"\xe2\x96",
              b"\xf0\x9f\x94", b"\xc3\x28", b"\xe2\x28\xa1", b"\xe2\x82\x28", b"\xf0\x28\x8c\xbc",
              b"\xc3\xa9\xc3", b"\xe2\x96\x88\x80"]


@needs_c
def test_utf8_edges_same_as_python() -> None:
    """cr_line decodes the bytes of a line itself: where each edge case of UTF-8 sits in a
    tqdm line (its description, bar, postfix, after the last update), it accepts exactly
    what ``bytes.decode("utf-8")`` takes, with the same strings (Latin-1, 2- and 4-byte
    characters alike), and declines the rest."""
    fast = _module().cr_line
    line = ("Epoch 1: {d} 50%|█████{b}     | 5/10 [00:01<00:01,  4.50it/s, loss=0.5, "
            "name={p}]\rEpoch 1: {d} 60%|██████    | 6/10 [00:01<00:01,  4.50it/s, loss=0.4, "
            "name=x]{t}")
    spots = ("d", "b", "p", "t")
    accepted = 0
    for seq in UTF8_EDGES:
        for spot in spots:
            raw = line.format(**{s: "{" + s + "}" for s in spots}).encode()
            for s in spots:
                raw = raw.replace(b"{" + s.encode() + b"}", seq if s == spot else b"")
            for whole in (True, False):
                got, tp, tm = _effect(fast, raw, whole, 7, 0)
                want, want_tp, want_tm = _effect(_python_line, raw, whole, 7, 0)
                accepted += _agree((got, tp, tm), (want, want_tp, want_tm), (seq, spot, raw))
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    assert got is False, (seq, spot)
    assert accepted >= 2 * 17 * 3  # the valid sequences, but where a postfix value ends


@needs_c
def test_line_prefix_same() -> None:
    """The launcher prefix found in C is _split_prefix's, on generated prefixes."""
    line_prefix = _module().line_prefix
    rng = random.Random(3)
    pieces = [" ", "\t", "\u2003", "\u00a0", "\x1c", "[", "]", ":", ": ", ",", "<std", "out>:",
              "err>:", "diag>:", "dia>:", "<stdout>:", "a", "Z", "_", "-", "1", "12", "123456",
              "1234567", "0", "x1", "\r"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert line_prefix(text) == trainlog._split_prefix(text)[0], repr(text)


@needs_c
def test_declines_unicode_digits_and_long_counts() -> None:
    fast = _module().tqdm_updates
    ok = "Training:  50%|█████     | 5/10 [00:01<00:01,  4.50it/s]"
    for text, accepts in [(ok, True), (ok.replace("5/10", "٥/10"), False),
                          (ok + " ²", False), (ok.replace("5/10", "9" * 19 + "/10"), False),
                          (ok.replace("4.50", "4" * 400), False)]:
        rows = rules.Rows()
        assert fast(text, None, 1, 0, rows) is accepts  # type: ignore[operator]
        assert bool(rows.tp) is accepts


def test_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPTRACE_PURE_PYTHON", "1")
    assert trainlog_fast._load_fast() is None
    monkeypatch.setenv("DPTRACE_PURE_PYTHON", "0")
    assert (trainlog_fast._load_fast() is None) is (_tqdm_fast is None)
