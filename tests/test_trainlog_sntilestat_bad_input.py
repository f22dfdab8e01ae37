"""Issue 12 for training logs and sntilestat listings: a bad record costs that record (with a
problem naming file and line), a bad file costs that file, nothing costs the report; a number
that does not fit its column becomes missing with a problem; a number cut by the end of a
truncated file is dropped, never kept as a different value.

Each test copies a real log or listing (tests/fixtures) into tmp_path and damages it the way
the reproduction in the issue did.
"""

from __future__ import annotations

import io
import math
import random
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from rich.console import Console

import dptrace
from dptrace import registry
from dptrace.cli import main
from dptrace.formats.sntilestat import read as sntilestat
from dptrace.formats.trainlog import read as trainlog
from dptrace.formats.trainlog import rules
from dptrace.formats.trainlog.terminal import _bar_fraction, _instance_table
from dptrace.reports.fmt import fmt, vs_median
from dptrace.sources import expand

HERE = Path(__file__).parent
FIX = HERE / "fixtures"
TRAIN = FIX / "trainlog"
SAMBA = (TRAIN / "ug_sn30_multinode_from_docs.md").read_bytes()
DSCHAT = (TRAIN / "dschat_step1_opt1.3b_gbs128.log").read_bytes()
BAGUA = (TRAIN / "bagua_net_synthetic_benchmark_from_docs.md").read_bytes()
GPT2 = (TRAIN / "bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out").read_bytes()
LISTING_DOC = (FIX / "sntilestat" / "ug_sn30_multinode_from_docs.md").read_bytes()
AITB = (FIX / "sntilestat" / "aitbdocs_sambanova_Miscellaneous_from_docs.md").read_bytes()


def _lines(data: bytes, a: int, b: int) -> bytes:
    """Lines a..b (1-based, inclusive)."""
    return b"".join(data.splitlines(keepends=True)[a - 1:b])


LISTING = _lines(LISTING_DOC, 153, 217)  # header + 64 tile rows
SAMBAFLOW = _lines(SAMBA, 79, 89)        # 8 'e2e samples_per_sec' lines


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _src(ds: dptrace.Dataset) -> pd.Series:
    return ds.sources.iloc[0]


def _errors(ds: dptrace.Dataset) -> pd.DataFrame:
    return ds.problems[ds.problems["severity"] == "error"]


def _cli(paths: list[Path], tmp_path: Path, capsys) -> tuple[int, str]:
    """``dptrace report`` with --json and --html: (exit code, terminal output)."""
    capsys.readouterr()
    code = main(["report", *map(str, paths), "--width", "100", "--json",
                 str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")])
    captured = capsys.readouterr()
    assert "internal error" not in captured.err, captured.err
    return code, captured.out


# --- NUL bytes: holes in a text file, not a binary file ------------------------------------

def test_four_nuls_in_the_head_cost_nothing_but_a_problem(tmp_path):
    clean = dptrace.load(_write(tmp_path, "clean.log", SAMBAFLOW))
    data = SAMBAFLOW.replace(b"instances.", b"instances.\0\0\0\0", 1)
    ds = dptrace.load(_write(tmp_path, "nul-head.log", data))
    src = _src(ds)
    assert src["format"] == "trainlog" and src["status"] == "partial"
    assert src["rows"] == _src(clean)["rows"] == 32
    assert_frame_equal(ds["throughput"].drop(columns=["run", "source"]),
                       clean["throughput"].drop(columns=["run", "source"]))
    errs = _errors(ds)
    assert errs["line"].tolist() == [1] and "NUL" in errs["message"].item()


def test_lustre_padding_after_the_last_line(tmp_path):
    ds = dptrace.load(_write(tmp_path, "nul-tail.log", SAMBAFLOW + b"\0" * 8192))
    assert _src(ds)["status"] == "partial" and _src(ds)["rows"] == 32
    errs = _errors(ds)
    assert errs["line"].tolist() == [12]  # 11 lines, then the zeros
    assert "8,192 NUL" in errs["message"].item() and "end of the file" in errs["message"].item()
    assert not ds.problems["message"].str.contains("newline").any()


def _holed_doc() -> tuple[bytes, int]:
    """The SambaNova doc with a 4 KB block of zeros written over the middle of line 85 (one
    of the 8 SambaFlow lines) and the lines after it: (data, line of the hole)."""
    start = SAMBA.index(b"e2e samples_per_sec: 727.1660927132315")  # line 86
    lo = start - 200
    data = SAMBA[:lo] + b"\0" * 4096 + SAMBA[lo + 4096:]
    return data, SAMBA.count(b"\n", 0, lo) + 1


def test_a_hole_in_the_middle_is_read_around_with_lines_right(tmp_path):
    clean = dptrace.load(_write(tmp_path, "clean.md", SAMBA))
    data, hole_line = _holed_doc()
    lost = SAMBA.count(b"\n") - data.count(b"\n")  # newlines the zeros wrote over
    ds = dptrace.load(_write(tmp_path, "holed.md", data))
    errs = _errors(ds)
    assert errs["line"].tolist() == [hole_line] and "4,096 NUL" in errs["message"].item()
    assert "rest of the line after it was not read" in errs["message"].item()
    # every row outside the damaged lines is the clean file's row, at its line (less the
    # lines the hole wrote over)
    keep = ["name", "value", "step", "lineno"]
    want = clean["throughput"][keep].copy()
    damaged = want["lineno"].between(hole_line, hole_line + lost)
    assert damaged.sum() >= 1
    want = want[~damaged]
    want.loc[want["lineno"] > hole_line, "lineno"] -= lost
    got = ds["throughput"][keep]
    assert got.reset_index(drop=True).equals(want.reset_index(drop=True))


def test_a_hole_gives_the_same_rows_in_the_parallel_scan(tmp_path, monkeypatch):
    data, _ = _holed_doc()
    big = data * 3 + SAMBAFLOW[:-1].replace(b"563.96", b"56", 1)  # and a cut last line
    p = _write(tmp_path, "holes.md", big)
    single = dptrace.read_trainlog(p)
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    parallel = dptrace.read_trainlog(p, executor=2)
    for table in ("throughput", "train_metrics"):
        assert_frame_equal(single[table], parallel[table])
    assert_frame_equal(single.problems, parallel.problems)
    lines, hole = data.count(b"\n"), _holed_doc()[1]
    assert _errors(single)["line"].tolist() == [hole, hole + lines, hole + 2 * lines,
                                                3 * lines + 11]


def test_a_number_cut_by_a_hole_is_dropped(tmp_path):
    line = b"0: e2e samples_per_sec: 613.7697389922524\n"
    data = SAMBAFLOW + line[:-10] + b"\0" * 512 + b"\n" + SAMBAFLOW
    ds = dptrace.load(_write(tmp_path, "cut-by-hole.log", data))
    values = ds["throughput"]["value"].tolist()
    assert len(values) == 16 and not any(abs(v - 613.769) < 0.01 for v in values[8:8])
    assert 613.76973 not in [round(v, 5) for v in values]  # '613.76973' (cut) never kept
    err = _errors(ds)
    assert err["line"].tolist() == [12] and "read up to it" in err["message"].item()


def _binaries() -> dict[str, bytes]:
    random.seed(12)
    elf = Path(sys.executable).resolve().read_bytes()[:1 << 16]
    return {
        "core.1234": bytes(range(256)) * 64,
        "python.log": elf,
        "random.out": bytes(random.getrandbits(8) for _ in range(20000)),
        "utf16.log": SAMBAFLOW.decode().encode("utf-16-le"),  # no BOM
        "zeros.log": b"\0" * 70000 + SAMBAFLOW,
        "tiny.log": b"\0ello",
    }


@pytest.mark.parametrize("name", sorted(_binaries()))
def test_real_binaries_stay_binary(tmp_path, name):
    ds = dptrace.load(_write(tmp_path, name, _binaries()[name]))
    assert _src(ds)["status"] == "unknown" and "binary" in _src(ds)["message"]


def _old_looks_binary(head: bytes) -> bool:
    """looks_binary before issue 12: any NUL byte made a file binary."""
    return b"\0" in head or registry._binary_text(head)


def test_detection_of_every_real_file_is_unchanged():
    roots = [FIX, HERE.parent / "examples" / "data", HERE.parents[1] / "shared" / "realdata"]
    sources, _ = expand([str(r) for r in roots if r.is_dir()])
    # the real files: not the bytecode Python writes beside a fixture's generating script
    sources = [s for s in sources if "__pycache__" not in Path(s.name).parts]
    assert len(sources) > 100
    for src in sources:
        head = src.head()
        assert registry._looks_binary(head) == _old_looks_binary(head), src.name
        assert not _old_looks_binary(head), src.name  # none of them is binary


# --- a number cut by the end of the file ------------------------------------------------------

def test_deepspeed_log_cut_inside_a_number_drops_it(tmp_path):
    line33 = DSCHAT.index(b"CurrSamplesPerSec=171.72")
    cut = DSCHAT[:line33 + len(b"CurrSamplesPerSec=17")]
    at_line = _lines(DSCHAT, 1, 32)
    ds = dptrace.load(_write(tmp_path, "dschat-cut.log", cut))
    before = dptrace.load(_write(tmp_path, "dschat-32.log", at_line))
    tp = ds["throughput"]
    assert 17.0 not in tp["value"].tolist()
    curr = tp[tp["name"] == "CurrSamplesPerSec"]["value"]
    assert curr.mean() == pytest.approx(
        before["throughput"].query("name == 'CurrSamplesPerSec'")["value"].mean())
    # the complete figure before the cut on the same line is kept
    running = tp[(tp["name"] == "RunningAvgSamplesPerSec") & (tp["lineno"] == 33)]
    assert running["value"].tolist() == [pytest.approx(171.9544086575348)]
    src = _src(ds)
    assert src["status"] == "partial"
    err = _errors(ds)
    assert err["line"].tolist() == [33]
    assert "'17'" in err["message"].item() and "(CurrSamplesPerSec)" in err["message"].item()


def test_cli_exit_code_of_a_cut_number(tmp_path, capsys):
    line33 = DSCHAT.index(b"CurrSamplesPerSec=171.72")
    p = _write(tmp_path, "dschat-cut.log", DSCHAT[:line33 + len(b"CurrSamplesPerSec=17")])
    code, _ = _cli([p], tmp_path, capsys)
    assert code == 1


@pytest.mark.parametrize("fast", [True, False])
def test_tqdm_line_with_a_torn_last_update_drops_only_that_update(tmp_path, fast):
    engine = "fast" if fast else "general"
    end = GPT2.index(b"59.72s/it]", GPT2.index(b"\r")) + len(b"59.7")  # in update 3's rate
    ds = dptrace.read_trainlog(_write(tmp_path, "gpt2-cut.out", GPT2[:end]), engine=engine)
    bar = ds["throughput"][ds["throughput"]["pattern"] == "tqdm"]
    last = bar[bar["lineno"] == bar["lineno"].max()]
    assert last["step"].tolist() == [1, 2]  # updates 1 and 2 of the line; 3 was torn
    assert last["value"].tolist() == [pytest.approx(1 / 58.76), pytest.approx(1 / 59.61)]
    err = _errors(ds)
    assert len(err) == 1 and "'59.7'" in err["message"].item()


def test_killed_mid_bar_after_a_whole_update_keeps_it(tmp_path):
    end = GPT2.index(b"59.72s/it]", GPT2.index(b"\r")) + len(b"59.72s/it]")
    ds = dptrace.load(_write(tmp_path, "gpt2-killed.out", GPT2[:end]))
    bar = ds["throughput"][ds["throughput"]["pattern"] == "tqdm"]
    assert bar[bar["lineno"] == bar["lineno"].max()]["step"].tolist() == [1, 2, 3]
    assert _src(ds)["status"] == "ok"
    assert ds.problems["message"].str.contains("newline").item()


def test_no_final_newline_after_a_word_is_only_a_warning(tmp_path):
    ds = dptrace.load(_write(tmp_path, "tail.log", SAMBAFLOW + b"done"))
    assert _src(ds)["status"] == "ok" and _src(ds)["rows"] == 32


def test_a_cut_number_that_no_recogniser_reads_is_still_an_error(tmp_path):
    ds = dptrace.load(_write(tmp_path, "tail.log", SAMBAFLOW + b"saving checkpoint 12"))
    assert _src(ds)["status"] == "partial" and _src(ds)["rows"] == 32
    assert _errors(ds)["line"].tolist() == [12] and "'12'" in _errors(ds)["message"].item()


# --- numbers that do not fit their column -----------------------------------------------------

def _tqdm_log() -> bytes:
    """A good 20-row tqdm log: the first 20 rated updates of the BigScience GPT-2 log's bars
    ('1/16 [00:58<14:41, 58.76s/it]'), one per line."""
    out = [seg.strip() + b"\n" for raw in GPT2.split(b"\n") for seg in raw.split(b"\r")
           if re.search(rb"\d+/\d+ \[[^\]]*, [\d.]+s/it\]", seg)]
    assert len(out) >= 20
    return b"".join(out[:20])


@pytest.mark.parametrize("fast", [True, False])
def test_tqdm_step_beyond_int64_costs_only_its_step(tmp_path, fast):
    engine = "fast" if fast else "general"
    good = _tqdm_log()
    clean = dptrace.read_trainlog(_write(tmp_path, "good.log", good), engine=engine)
    last = good.splitlines()[-1]
    bad = re.sub(rb"\d+/(\d+) \[", rb"99999999999999999999/\1 [", last, count=1)
    ds = dptrace.read_trainlog(_write(tmp_path, "bigstep.log", good + bad + b"\n"), engine=engine)
    tp = ds["throughput"]
    assert len(tp) == len(clean["throughput"]) + 1 == 21
    assert tp["step"].isna().tolist() == [False] * 20 + [True]
    assert tp["value"].notna().all()
    err = _errors(ds)
    assert err["line"].tolist() == [21] and "99999999999999999999" in err["message"].item()
    assert _src(ds)["status"] == "partial"


def test_counts_and_steps_that_overflow_a_float_do_not_fail_the_file(tmp_path):
    text = (SAMBAFLOW +
            b"Training: 50%|#  | " + b"9" * 400 + b".5k/3k [00:01<00:01, 2.5it/s]\n"
            b"{'loss': 0.5, 'learning_rate': 1e-05, 'step': 1e999, 'epoch': 1.0}\n"
            b"{'loss': 0.4, 'learning_rate': 1e-05, 'step': 7, 'epoch': 1e999}\n")
    ds = dptrace.load(_write(tmp_path, "overflow.log", text))
    assert _src(ds)["status"] == "partial"
    assert len(ds["throughput"]) == 9 and ds["throughput"]["step"].isna().iloc[-1]
    tm = ds["train_metrics"]
    assert tm[tm["name"] == "loss"]["step"].isna().tolist() == [True, False]
    assert tm[tm["name"] == "loss"]["epoch"].isna().tolist() == [False, True]
    assert sorted(_errors(ds)["line"].tolist()) == [12, 13, 13, 14, 14]


def test_rate_that_is_inf_as_a_float_becomes_missing(tmp_path, capsys):
    data = BAGUA.replace(b"Iter #8: 2760.0 img/sec", b"Iter #8: 2760.1e3080 img/sec", 1)
    clean = dptrace.load(_write(tmp_path, "bagua.md", BAGUA))
    ds = dptrace.load(_write(tmp_path, "bagua-inf.md", data))
    tp = ds["throughput"]
    assert len(tp) == len(clean["throughput"])
    assert tp["value"].isna().sum() == 1 and np.isfinite(tp["value"].dropna()).all()
    line = BAGUA[:BAGUA.index(b"Iter #8: 2760.0")].count(b"\n") + 1
    err = _errors(ds)
    assert err["line"].tolist() == [line] and "not a finite number" in err["message"].item()
    code, out = _cli([_write(tmp_path, "bagua-inf.md", data)], tmp_path, capsys)
    assert code == 1 and "img/sec" in out


def test_huge_rates_do_not_break_the_terminal_report(tmp_path, capsys):
    data = re.sub(rb"Img/sec per GPU: [\d.]+", b"Img/sec per GPU: 1e308", BAGUA)
    code, out = _cli([_write(tmp_path, "bagua-1e308.md", data)], tmp_path, capsys)
    assert code == 0 and "Img/sec per GPU" in out and "1e+308" in out


def test_inf_in_train_metrics_is_missing_with_a_warning(tmp_path):
    text = SAMBAFLOW + b"{'loss': 0.5, 'grad_norm': inf, 'learning_rate': 1e-05, 'epoch': 1.0}\n"
    ds = dptrace.load(_write(tmp_path, "gradnorm.log", text))
    tm = ds["train_metrics"]
    assert tm[tm["name"] == "grad_norm"]["value"].isna().all()
    assert _src(ds)["status"] == "ok"
    assert ds.problems["severity"].tolist() == ["warning"] and ds.problems["line"].item() == 12


def test_fmt_and_bars_take_any_float():
    assert fmt(math.inf) == "inf" and fmt(-math.inf) == "-inf"
    assert fmt(1e308) == "1e+308" and len(fmt(-3.5e200)) < 12
    assert fmt(float("nan")) == "-" and fmt(1234.5) == "1,234.50"
    assert _bar_fraction(float("nan"), 10.0) == 0.0
    assert _bar_fraction(math.inf, 10.0) == 0.0
    assert _bar_fraction(1e308, 1e308) == 1.0
    assert _bar_fraction(5.0, 0.0) == 0.0 and _bar_fraction(pd.NA, 1.0) == 0.0
    assert vs_median(math.inf) == "-" and vs_median(float("nan")) == "-"


def test_instance_table_with_nan_and_huge_values_renders():
    inst = pd.DataFrame({"instance": ["0", "1", "2"], "value": [np.nan, 1e308, np.inf],
                         "straggler": [False, False, True], "rows": [1, 1, 1],
                         "warmup_rows": [0, 0, 0], "below_median_pct": [np.nan, 0.0, np.inf],
                         "first_lineno": [1, 2, 3]})
    console = Console(width=100, color_system=None, file=io.StringIO())
    console.print(_instance_table(pd.Series({"metric": "images_per_s"}), inst))
    assert "1e+308" in console.file.getvalue()  # type: ignore[attr-defined]


# --- sntilestat -------------------------------------------------------------------------------

def _both_routes(path: Path, monkeypatch) -> dptrace.Dataset:
    """Load ``path`` by the quick route and by the general route: they must agree."""
    quick = dptrace.load(path, format="sntilestat")
    with monkeypatch.context() as m:
        m.setattr(sntilestat, "_quick", lambda buf, lines, name, problems: None)
        general = dptrace.load(path, format="sntilestat")
    assert_frame_equal(quick["tiles"], general["tiles"])
    assert_frame_equal(quick.problems, general.problems)
    return quick


def test_pid_beyond_int64_is_missing_row_kept(tmp_path, monkeypatch):
    data = LISTING.replace(b" 2750333  vsastry", b" 99999999999999999999  vsastry", 1)
    ds = _both_routes(_write(tmp_path, "bigpid.txt", data), monkeypatch)
    t = ds["tiles"]
    assert len(t) == 64 and t["pid"].isna().tolist() == [True] + [False] * 63
    assert t["user"].iloc[0] == "vsastry"
    err = _errors(ds)
    assert err["line"].tolist() == [2] and "99999999999999999999" in err["message"].item()
    assert _src(ds)["status"] == "partial"


def test_pid_beyond_int64_in_collapsed_copies(tmp_path):
    data = re.sub(rb"  +", b" ", LISTING).replace(b" 2750333 vsastry",
                                                   b" 99999999999999999999 vsastry", 1)
    ds = dptrace.load(_write(tmp_path, "bigpid-collapsed.txt", data))
    assert len(ds["tiles"]) == 64 and ds["tiles"]["pid"].isna().sum() == 1
    assert _errors(ds)["line"].tolist() == [2]


def test_cr_only_listing_is_read(tmp_path, monkeypatch):
    lf = dptrace.load(_write(tmp_path, "lf.md", AITB))
    ds = _both_routes(_write(tmp_path, "cr.md", AITB.replace(b"\n", b"\r")), monkeypatch)
    assert len(ds["tiles"]) == len(lf["tiles"]) == 64
    cols = ["xrdu", "rdu", "tile", "exec_pct", "pid", "lineno"]
    assert_frame_equal(ds["tiles"][cols], lf["tiles"][cols])
    assert "lone CR" in ds.problems["message"].item()


def test_cr_only_doc_without_header_is_detected(tmp_path):
    single = (FIX / "sntilestat" / "ug_sn30_single_from_docs.md").read_bytes()
    lf = dptrace.load(_write(tmp_path, "lf.md", single))
    ds = dptrace.load(_write(tmp_path, "cr.md", single.replace(b"\n", b"\r")))
    assert "sntilestat" in _src(ds)["format"]
    assert ds["tiles"]["lineno"].tolist() == lf["tiles"]["lineno"].tolist()


def test_listing_cut_inside_the_pid(tmp_path, monkeypatch):
    data = LISTING[:LISTING.rindex(b"2750332") + 2]
    ds = _both_routes(_write(tmp_path, "cut-pid.txt", data), monkeypatch)
    t = ds["tiles"]
    assert len(t) == 64 and 27 not in t["pid"].dropna().tolist()
    assert pd.isna(t["pid"].iloc[-1]) and t["pid"].iloc[:-1].notna().all()
    err = _errors(ds)
    assert err["line"].tolist() == [65] and "'27'" in err["message"].item()
    assert _src(ds)["status"] == "partial"


def test_listing_cut_inside_an_idle_rows_last_percentage(tmp_path, monkeypatch):
    idle = (b"/XRDU_3/RDU_1/TILE_7 100.0   0.0    0.0    0.0    0.0      0.0")
    ds = _both_routes(_write(tmp_path, "cut-pct.txt", LISTING + idle[:-2]), monkeypatch)
    t = ds["tiles"]
    assert len(t) == 65 and pd.isna(t["quiesce_pct"].iloc[-1])
    assert _errors(ds)["line"].tolist() == [66]
    whole = _both_routes(_write(tmp_path, "whole.txt", LISTING + idle), monkeypatch)
    assert whole["tiles"]["quiesce_pct"].iloc[-1] == 0.0 and _errors(whole).empty
    assert whole.problems["line"].tolist() == [66]  # the missing newline: a warning


def test_pid_without_user_or_command_renders(tmp_path, capsys):
    data = re.sub(rb" 2750333  vsastry /opt\S*", b" 1234567", LISTING)
    p = _write(tmp_path, "nouser.txt", data)
    ds = dptrace.load(p)
    t = ds["tiles"]
    assert t[t["pid"] == 1234567]["user"].isna().all()
    code, out = _cli([p], tmp_path, capsys)
    assert code == 0 and "1234567" in out
    assert (tmp_path / "r.html").read_text().rstrip().endswith("</html>")


def test_nul_hole_in_a_listing_is_named(tmp_path, monkeypatch):
    at = LISTING.index(b"/XRDU_1/RDU_0/TILE_0")
    data = LISTING[:at] + b"\0" * 64 + b"\n" + LISTING[at:]
    p = _write(tmp_path, "holed.txt", data)
    assert registry.looks_binary(data) is False
    ds = _both_routes(p, monkeypatch)
    assert len(ds["tiles"]) == 64
    err = _errors(ds)
    line = LISTING[:at].count(b"\n") + 1
    assert err["line"].tolist() == [line] and "64 NUL" in err["message"].item()
    assert ds["tiles"]["lineno"].max() == 66


def test_rules_helpers_keep_c_and_python_agreeing():
    # _tqdm_count is called from C for counts like '1.5k': it must not raise
    assert rules._tqdm_count("1.5k") == 1500
    assert rules._tqdm_count("9" * 400 + "k") == math.inf


def test_lustre_padding_after_a_listing_is_named(tmp_path, monkeypatch):
    ds = _both_routes(_write(tmp_path, "padded.txt", LISTING + b"\n" + b"\0" * 8192),
                      monkeypatch)
    assert len(ds["tiles"]) == 64
    assert _errors(ds)["line"].tolist() == [67] and "8,192 NUL" in _errors(ds)["message"].item()
