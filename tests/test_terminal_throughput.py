"""The terminal throughput section shows what matters (issue 11, item 4).

On the real logs of ``shared/realdata/trainlog`` (beside the clone) and ``tests/fixtures``:
training throughput of known trainers comes first, setup bars (downloads, checkpoint
loading) are marked ``phase`` load or download and shown only with ``show_all``, instances come in
rank order, and a series with one instance has nothing to compare, so no bar.
"""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

import dptrace
from dptrace.formats.trainlog import rules
from dptrace.formats.trainlog import terminal as terminal_throughput
from dptrace.formats.trainlog import throughput as thr
from dptrace.reports import model, terminal
from dptrace.reports.json_report import to_dict

HERE = Path(__file__).parent
REAL = HERE.parent.parent / "shared" / "realdata" / "trainlog"
FIX = HERE / "fixtures" / "trainlog"
UG_SN30 = HERE.parent / "examples" / "data" / "ug_sn30_multinode_from_docs.md"
CHECK7B = FIX / "dschat_check7b_16gpu_training.log"  # HF downloads + 32 'Loading checkpoint shards'
MEG_DS = FIX / "megatron_ds_gpt3_125M_8gpu.log"  # DeepSpeed + Megatron, printed by one rank
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
BAR_BLOCKS = set("▏▎▍▌▋▊▉█")


@cache
def _report(path: Path) -> model.Report:
    """The report of ``path`` with its throughput section only, built once per process
    (drawing it changes nothing): the findings of every run, half the cost of a whole
    report here, are read by no test of this module (the section's tables and its text,
    default and --all, are the whole report's on every log of realdata and the fixtures)."""
    return model._build(dptrace.load(str(path)), "report", {"throughput"}, {})


def throughput_text(path: Path, *, show_all: bool = False) -> str:
    """The throughput section as the terminal draws it, on a pinned 120-column console."""
    report = _report(path)
    section = report.section("throughput")
    assert section is not None
    console = Console(width=120, color_system=None, file=io.StringIO())
    only = model.Report(report.dataset, [section])
    if show_all:
        terminal.render(only, console, show_all=True)
    else:
        terminal.render(only, console)  # the default view, as `dptrace report` draws it
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def panels(text: str) -> list[str]:
    """The series panels of a drawn section, each as its lines (title line first)."""
    found, cur = [], None
    for line in text.splitlines():
        if line.startswith("╭"):
            cur = [line]
        elif cur is not None:
            cur.append(line)
            if line.startswith("╰"):
                found.append("\n".join(cur))
                cur = None
    return found


@pytest.fixture(scope="module")
def real_default() -> str:
    if not REAL.is_dir():
        pytest.skip("shared/realdata is not beside the clone")
    return throughput_text(REAL)


@needs_real
def test_deepspeed_and_megatron_are_in_the_default_view(real_default):
    titles = [p.splitlines()[0] for p in panels(real_default)]
    assert len(titles) == terminal_throughput.MAX_SERIES
    assert any("· deepspeed ─" in t for t in titles)
    assert any("· megatron ─" in t for t in titles)
    # the job-level figures of known trainers come before any progress bar
    assert not any("· tqdm" in t for t in titles)


@needs_real
def test_no_setup_bar_by_default_and_the_elision_says_what_is_hidden(real_default):
    assert "Downloading" not in real_default
    assert "Loading checkpoint shards" not in real_default
    last = [line for line in real_default.splitlines() if line.startswith("... and ")]
    assert len(last) == 1
    # 59 series in the directory (its runs: the directory, and the second runs inside the
    # ezpz and Bagua docs): 12 shown, 11 setup bars (load, download) among the 47 hidden
    assert last[0].startswith("... and 47 more series (36 training, 11 setup bars: ")
    assert "downloads" in last[0] and "loading" in last[0]
    assert "--all shows them" in last[0]


@needs_real
def test_show_all_shows_every_series_setup_last():
    text = throughput_text(REAL, show_all=True)
    titles = [p.splitlines()[0] for p in panels(text)]
    assert len(titles) == 59
    assert "... and" not in text
    setup = [k for k, t in enumerate(titles) if "· load" in t or "· download" in t]
    assert len(setup) == 11
    # last: every run's training series first (a folder of logs is one run per log)
    assert setup == list(range(len(titles) - 11, len(titles)))
    assert any("Loading checkpoint shards" in t for t in titles)
    assert any("Downloading shards" in t for t in titles)


def test_download_and_checkpoint_loading_bars_are_load_and_download():
    tp = dptrace.load(str(CHECK7B))["throughput"]
    assert str(tp["phase"].dtype) == "category"
    bars = tp[tp["pattern"] == "tqdm"]
    loading = bars[bars["label"] == "Loading checkpoint shards"]
    downloads = bars[bars["label"].str.startswith("Downloading", na=False)]
    assert len(loading) == 48 and len(downloads) == 700  # repeats are rows too (flagged)
    assert set(loading["phase"]) == {"load"} and set(downloads["phase"]) == {"download"}
    # the bars after 'Found cached dataset parquet (...)' have no description: the line
    # before them says they load the dataset's splits (L764-767)
    assert set(bars.loc[bars["label"].isna(), "phase"]) == {"load"}
    # the summary keeps phase as part of the series
    s = thr.throughput_summary(tp)
    assert set(s.loc[s["label"] == "Loading checkpoint shards", "phase"]) == {"load"}


def test_named_trainer_lines_and_training_bars_are_train():
    tp = dptrace.load(str(MEG_DS))["throughput"]
    assert set(tp["pattern"].astype(str)) == {"deepspeed", "megatron"}
    assert set(tp["phase"]) == {"train"}
    lightning = dptrace.load(str(FIX / "mlprof_deepspeed_thetagpu_16gpu.log"))["throughput"]
    assert set(lightning.loc[lightning["label"] == "Training", "phase"]) == {"train"}


@pytest.mark.parametrize(("label", "phase"), [
    # descriptions as real tools print them, digits as '#' (the label's form)
    ("Loading checkpoint shards", "load"),           # transformers
    ("Downloading (…)of-#.safetensors", "download"),  # huggingface_hub
    ("Fetching # files", "download"),                # huggingface_hub snapshot_download
    ("Downloading shards", "download"),              # transformers
    ("Map (num_proc=#)", "load"),                    # datasets
    ("Generating validation split", "load"),         # datasets: load, though 'validation'
    ("Running tokenizer on dataset", "load"),        # transformers run_clm.py
    ("Resolving data files", "load"),                # datasets
    ("Graph compilation", "load"),                   # Graphcore
    ("Validation DataLoader #", "eval"),             # Lightning
    ("Sanity Checking DataLoader #", "eval"),        # Lightning
    ("Evaluating", "eval"),
    ("Epoch #", "train"),                            # Lightning
    ("Training", "train"),
    ("Loss:# | Accuracy:#%", "train"),               # Graphcore poprun
])
def test_label_phase_rule(label, phase):
    assert rules.PHASES[rules.label_phase(label)] == phase


def test_sambaflow_instances_in_rank_order_in_the_terminal():
    text = throughput_text(UG_SN30)
    samba = next(p for p in panels(text) if "e2e samples_per_sec" in p.splitlines()[0])
    rows = [line.split() for line in samba.splitlines()[2:]]
    shown = [r[1] for r in rows if len(r) > 2 and r[1].isdigit()][:8]
    assert shown == [str(k) for k in range(8)]


def test_per_instance_is_in_rank_order_whatever_the_row_order(tmp_path):
    """Rows in another order (sorted by value, as a user may pass them) give the same table:
    numeric rank order (0, 1, 2, ..., 10, 11), not line order and not string order."""
    log = tmp_path / "slurm-5.out"
    log.write_text("".join(f"{r}: step {s} throughput: {100 + r + s} samples/sec\n"
                           for s in range(3) for r in (11, 2, 0, 10, 1)))
    tp = dptrace.load(str(log))["throughput"]
    shuffled = tp.sort_values("value", ascending=False, kind="stable")
    inst = thr.per_instance(shuffled)
    assert inst["instance"].tolist() == ["0", "1", "2", "10", "11"]
    pd.testing.assert_frame_equal(inst, thr.per_instance(tp))
    samba = thr.per_instance(dptrace.load(str(UG_SN30))["throughput"].iloc[::-1])
    assert samba.loc[samba["pattern"] == "sambaflow", "instance"].tolist() == [
        str(k) for k in range(8)]


def test_rank_keys_sort_numbers_as_numbers():
    labels = pd.Series(["11", "7", "0", "10", "2", "1"])  # as srun --label prints them
    keys = thr.rank_keys(labels).sort_values(["text", "number", "rest"])
    assert labels[keys.index].tolist() == ["0", "1", "2", "7", "10", "11"]
    roles = pd.Series(["default10", "default2", "default0"])  # torchrun --tee
    keys = thr.rank_keys(roles).sort_values(["text", "number", "rest"])
    assert roles[keys.index].tolist() == ["default0", "default2", "default10"]


def test_a_single_instance_series_has_no_bar_and_no_vs_median():
    text = throughput_text(MEG_DS)
    drawn = panels(text)
    assert len(drawn) == 3  # DeepSpeed Curr/RunningAvg, Megatron samples: 1 rank
    for panel in drawn:
        assert not BAR_BLOCKS & set(panel), panel
        assert "vs median" not in panel
    curr = next(p for p in drawn if "CurrSamplesPerSec" in p.splitlines()[0])
    assert "12 steps (1 warm-up), from line 2703" in curr  # value, steps and line kept
    assert "357.06" in curr


def test_series_order_is_the_order_of_the_json_summary():
    ds = dptrace.load(str(FIX))
    report = model.build(ds)
    summary = report.tables["throughput.summary"]
    pd.testing.assert_frame_equal(thr.series_order(summary), summary)
    phase = summary["phase"].map({p: k for k, p in enumerate(rules.PHASES)})
    for _, ph in phase.groupby(summary["run"], observed=True, sort=False):  # per run
        assert ph.is_monotonic_increasing
    records = to_dict(report, 0)["sections"]["throughput"]["tables"]["summary"]
    assert [(r["source"], r["name"], r["label"], r["metric"]) for r in records] == [
        (r.source, r.name, None if pd.isna(r.label) else r.label, r.metric)
        for r in summary.itertuples()]
    first = summary.iloc[0]
    assert first["pattern"] in thr.TRAINER_PATTERNS and first["phase"] == "train"
