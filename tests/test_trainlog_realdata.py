"""Hand-checked expectations for the REAL training logs in tests/fixtures/trainlog/.

Every expected number here was derived from the raw file WITHOUT dptrace: grep/awk/python
one-liners run on the fixture itself. The derivation is written next to each value
("grep -n PATTERN FILE" etc.; "L123" means physical line 123 of the file, 1-based, split on
"\\n" only). Where the contract (docs/trainlog.md plus the design notes) does not settle a
question for a particular file, the test takes the most sensible reading and says so in a
"# JUDGEMENT:" comment, so that it is easy to find and discuss.

Provenance of every fixture: tests/fixtures/trainlog/PROVENANCE.tsv.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

import dptrace

FIX = Path(__file__).parent / "fixtures" / "trainlog"

SEED = "sambanova_dataparallel_seed003.txt"
UG_SN30 = "ug_sn30_multinode_from_docs.md"
UNET = "alcfws_sambanova_unet2d_from_docs.md"
GRAPHCORE = "alcfws_graphcore_resnet50_from_docs.md"
EZPZ = "alcfws_ezpz_hf_trainer_from_docs.md"
HF_N16 = "bigscience_hf_ds_gpt2_n16_bs4.out"
HF_N4 = "bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out"
MEG_N64 = "bigscience_megatron_n64_tp4_pp64.out"
MEG_ZERO = "bigscience_meg_ds_zero_n16.out"
MDS_8 = "megatron_ds_gpt3_125M_8gpu.log"
MDS_RLTD = "megatron_ds_gpt3_125M_randomltd_baseline.log"
BLOOM = "bigscience_bloom176b_chronicles_from_docs.md"
BAGUA = "bagua_net_synthetic_benchmark_from_docs.md"
KERAS = "andrewor14_tf_keras_rank0_stderr.log"
HVD_TF2 = "alcfws_horovod_tf2_cpu_n8.out"
HVD_CIFAR = "alcfws_horovod_pytorch_cifar10_8rank.out.cpu"
CIPHER = "cipherdoc_slurm_horovod_crash.out"
MLPROF_DDP = "mlprof_ddp_thetagpu_16gpu.log"
MLPROF_DS = "mlprof_deepspeed_thetagpu_16gpu.log"
MLPROF_COMMS = "mlprof_deepspeed_comms_logger_polaris.log"
DSCHAT1 = "dschat_step1_opt1.3b_gbs128.log"
DSCHAT7B = "dschat_check7b_16gpu_training.log"


@cache
def _load(name: str) -> dptrace.Dataset:
    return dptrace.read_trainlog(FIX / name)


def tp(name: str) -> pd.DataFrame:
    return _load(name)["throughput"].copy()


def tm(name: str) -> pd.DataFrame:
    return _load(name)["train_metrics"].copy()


def rows(df: pd.DataFrame, **eq) -> pd.DataFrame:
    """Rows whose columns equal the given values (None means null)."""
    mask = pd.Series(True, index=df.index)
    for col, val in eq.items():
        if val is None:
            mask &= df[col].isna()
        else:
            mask &= (df[col].astype("object") == val).fillna(False).astype(bool)
    return df[mask]


def ints(s: pd.Series) -> list:
    return [None if pd.isna(v) else int(v) for v in s]


def approx(x, rel=1e-9):
    return pytest.approx(x, rel=rel)


# --------------------------------------------------------------------------------------
# Fixture bookkeeping
# --------------------------------------------------------------------------------------

def test_every_fixture_has_a_provenance_line_with_its_size():
    with open(FIX / "PROVENANCE.tsv", newline="", encoding="utf-8") as fh:
        prov = {r["file"]: r for r in csv.DictReader(fh, delimiter="\t")}
    files = {p.name for p in FIX.iterdir() if p.is_file() and p.name != "PROVENANCE.tsv"}
    assert files == set(prov)
    assert len(files) == 23  # 21 realdata/trainlog files, the SambaNova seed, DS-Chat step 3
    for name, r in prov.items():
        assert r["kind"] == "trainlog"
        assert int(r["size_bytes"]) == (FIX / name).stat().st_size, name


def _all_fixtures():
    return sorted(p.name for p in FIX.iterdir() if p.is_file() and p.name != "PROVENANCE.tsv")


@pytest.mark.parametrize("name", _all_fixtures())
def test_problems(name):
    # python: open(f, 'rb').read().decode('utf-8') succeeds for all 22 files, so no
    # "not UTF-8" warning is due; `tail -c1 | xxd -p` is '0a' for all but the Graphcore doc
    # (last line L99 '</details>' has no newline).
    p = _load(name).problems
    got = [(int(r["line"]), r["severity"]) for _, r in p.iterrows()]
    if name == GRAPHCORE:
        assert got == [(99, "warning")]
        assert "newline" in p["message"].iloc[0]
    else:
        assert got == [], p["message"].tolist()


# --------------------------------------------------------------------------------------
# Row counts per pattern, per file (the whole throughput table, nothing else may appear)
# --------------------------------------------------------------------------------------

EXPECTED_PATTERNS = {
    # grep -c 'e2e samples_per_sec: [0-9]' -> 8 (L79 is prose without a number);
    # L234 transformers-hook dict; L235 '247/3247 [01:03<00:00, 50.76it/s]'
    SEED: {"sambaflow": 8, "transformers_hook": 1, "tqdm": 1},
    UG_SN30: {"sambaflow": 8, "transformers_hook": 1, "tqdm": 1},  # cmp: identical to SEED
    UNET: {"sambaflow": 1},  # L58
    # generic: grep -n 'throughput: .* samples/sec' -> L86, L92.
    # tqdm (/tmp helper: split on \n then \r, regex 'n/total [el<rem, RATE]'): L83 '75/78 ...
    # 2.05s/it', L88 '78/78 ... 2.16s/it', L94 '78/78 ... 2.02s/it'. L81 '[00:04<00:00]' has no
    # rate, L89 is cut off at '75/7[1,0]<stdout>' -> no row.
    # JUDGEMENT: L83 has no 'NN%|' (overwritten by the interleaved '[1,0]<stdout>' text), but its
    # tail '| 75/78 [02:42<00:06,  2.05s/it]' is as much a tqdm update as the seed's bare
    # '247/3247 [01:03<00:00, 50.76it/s]', which the design notes count as a tqdm row.
    GRAPHCORE: {"generic": 2, "tqdm": 3},
    # L1249 and L1264: train_samples/steps/tokens_per_second (3 each); L1271-1273 metrics table.
    # eval_* (L1250, L1274, L1281, L1282) are not throughput.
    EZPZ: {"hf_trainer": 6, "hf_metrics_table": 3},
    # grep -c "'train_samples_per_second'" -> 16 dicts (L482-497), x2 (samples + steps)
    HF_N16: {"hf_trainer": 32},
    # tqdm: 4 bars x 16 rated updates (L1767/1772/1777/1782; '0/16 ?it/s' gives none)
    #       + 4 close lines x 2 updates (L1791-1794: 55.00s/it then 57.45s/it, not identical)
    # hf_trainer: L1787-1790 (4 dicts x 2); hf_metrics_table: L1820, L1821
    HF_N4: {"tqdm": 72, "hf_trainer": 8, "hf_metrics_table": 2},
    # grep -c ' iteration .*/ *1000 |' -> 6 lines, all with 'global batch size:     4' -> one
    # samples_per_s each (gbs / step time; the step time itself is train_metrics step_time_s)
    MEG_N64: {"megatron": 6},
    # 4 iteration lines (L6103-6113), none has 'global batch size': step times only (no rate)
    MEG_ZERO: {},
    # grep -c 'SamplesPerSec' -> 12 (x2 names); grep -c ' iteration .*/ 1716613 |' -> 12
    MDS_8: {"deepspeed": 24, "megatron": 12},
    # grep -c SamplesPerSec -> 47; grep -c ' iteration .*/  171661 |' -> 47, all with gbs 256
    MDS_RLTD: {"deepspeed": 94, "megatron": 47},
    # 18 iteration records (L45, L202-210, L212-213, L257/260/263/266/269 wrapped over 3 lines,
    # L303), each prints 'samples per second': that one only (not also gbs / step time)
    BLOOM: {"megatron": 18},
    # 20 'Iter #' lines + 2 'Img/sec per GPU' + 2 'Total img/sec'
    BAGUA: {"horovod_benchmark": 24},
    # grep -c '\[TRAIN\]|...' ; deepspeed: grep -c SamplesPerSec -> 15 (x2); flops profiler
    # 'samples/second:' L693; tqdm 'Training': L1068..L4158 (9) + L4540 (2 updates: 1.58s/it,
    # 1.83s/it); L620 '0/10 ?it/s' gives none
    MLPROF_DS: {"deepspeed": 30, "deepspeed_flops": 1, "tqdm": 11},
    # grep -c SamplesPerSec -> 736 (x2)
    DSCHAT1: {"deepspeed": 1472},
    # JUDGEMENT: HF download/loading bars are tqdm rows (the contract's own label example is
    # 'Downloading shards'). Helper enumeration: 750 rated updates; 4 of them repeat the
    # immediately preceding update exactly (L561: 67.28s/it, 67.23s/it, 67.25s/it twice in a
    # row; L747: 2.77s/it twice). Every update is a row (repeats are flagged, not dropped).
    DSCHAT7B: {"tqdm": 750},
    # no throughput line at all in these (grep -ciE 'per_sec|/sec|it/s|s/it|PerSec' -> 0, or
    # only config/comm-bandwidth noise)
    HVD_TF2: {},
    HVD_CIFAR: {},
    CIPHER: {},
    MLPROF_DDP: {},
    # JUDGEMENT: the DeepSpeed comms_logger table ('tput_avg (Gbps)', 'busbw_avg (Gbps)') is
    # collective bandwidth, not training throughput; '"metric": "throughput"' L130 is config.
    MLPROF_COMMS: {},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PATTERNS))
def test_throughput_rows_per_pattern(name):
    got = Counter(tp(name)["pattern"].astype(str))
    assert dict(got) == EXPECTED_PATTERNS[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_PATTERNS))
def test_throughput_table_basic_sanity(name):
    t = tp(name)
    assert (t["value"] > 0).all()
    assert t["lineno"].notna().all()
    assert set(t["scope"].astype(str)) <= {"instance", "device", "global"}


def test_keras_rows_counted_by_pattern():
    # grep -cE 'TimeHistory: [0-9.]+ seconds, [0-9.]+ examples/second between steps' -> 110
    # (The whole-table count is not asserted: L766 ends with "'avg_exp_per_second':
    # 1650.26...}" inside a stats dict; whether that is a recognised figure is open.)
    t = tp(KERAS)
    assert len(rows(t, pattern="keras")) == 110


# --------------------------------------------------------------------------------------
# SambaNova seed 003 (and its identical copy ug_sn30_multinode_from_docs.md)
# --------------------------------------------------------------------------------------

# grep -o 'e2e samples_per_sec: [0-9.]*' sambanova_dataparallel_seed003.txt  (L82..L89)
SEED_E2E = [563.9653143065, 613.7697389922524, 603.3066563941279, 633.8692958200872,
            651.8467849404489, 727.1660927132315, 675.9747651583616, 808.442427336472]


class TestSeed003:
    def test_sambaflow_rows(self):
        s = rows(tp(SEED), pattern="sambaflow")
        assert s["value"].tolist() == SEED_E2E  # exact: numbers as printed
        assert ints(s["lineno"]) == list(range(82, 90))  # grep -n -> 82..89
        assert s["instance"].tolist() == [str(i) for i in range(8)]  # order of appearance
        assert set(s["name"]) == {"e2e samples_per_sec"}
        assert set(s["metric"].astype(str)) == {"samples_per_s"}
        assert set(s["scope"].astype(str)) == {"instance"}
        assert s["label"].isna().all()

    def test_sambaflow_mean_by_hand(self):
        s = rows(tp(SEED), pattern="sambaflow")
        # awk '{s+=$NF;n++} END{printf "%d %.6f %.6f", n, s, s/n}' -> 8 5278.341076 659.792634
        assert s["value"].sum() == approx(5278.341075661482)
        assert s["value"].mean() == approx(659.7926344576853)
        assert round(s["value"].mean(), 2) == 659.79

    def test_transformers_hook_dict(self):
        # L234: {'e2e_train_time': 2179.2292835712433, 'training_sequences_per_second':
        #        192467.31088004305, 'final_loss': 4.781678199768066}
        h = rows(tp(SEED), pattern="transformers_hook")
        assert len(h) == 1
        r = h.iloc[0]
        assert r["value"] == approx(192467.31088004305)
        assert r["name"] == "training_sequences_per_second"  # the key as printed
        assert r["metric"] == "sequences_per_s"
        assert r["scope"] == "global"
        assert int(r["lineno"]) == 234
        assert pd.isna(r["instance"])  # no launcher prefix: the printer is unknown

    def test_tqdm_fragment(self):
        # L235: '247/3247 [01:03<00:00, 50.76it/s]'
        q = rows(tp(SEED), pattern="tqdm")
        assert len(q) == 1
        r = q.iloc[0]
        assert r["value"] == approx(50.76)
        assert int(r["step"]) == 247
        assert r["metric"] == "iterations_per_s"
        assert int(r["lineno"]) == 235
        assert pd.isna(r["instance"])
        assert pd.isna(r["label"])  # no description before the counter

    def test_no_rows_from_prose_or_command_lines(self):
        # L79 'The throughput is calculated by averaging the `e2e samples_per_sec` ...',
        # L76 '--min-throughput 395', L140 '--min_throughput 299000 --max_throughput 600000'
        assert not ({76, 79, 140} & set(ints(tp(SEED)["lineno"])))

    def test_final_loss_in_train_metrics(self):
        # L234 'final_loss': 4.781678199768066
        # JUDGEMENT: the name is not fixed by the contract (final_loss expected); only require a
        # loss-ish name.
        m = tm(SEED)
        hit = m[(m["lineno"] == 234) & m["name"].str.contains("loss")]
        assert hit["value"].tolist() == [approx(4.781678199768066)]

    def test_ug_sn30_copy_parses_identically(self):
        # cmp seeds/003_fcbda86233537a6e.txt realdata/trainlog/ug_sn30_multinode_from_docs.md -> same
        a = tp(SEED).drop(columns=["run", "source"]).reset_index(drop=True)
        b = tp(UG_SN30).drop(columns=["run", "source"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)


def _summary_fn():
    from dptrace.formats.trainlog import throughput as mod

    return getattr(mod, "summarize", None) or mod.throughput_summary


class TestSeed003Summary:
    """Summary checks (API-dependent; adjust names here if the summary API changes)."""

    def _row(self):
        s = _summary_fn()(tp(SEED))
        s = s[(s["pattern"].astype(str) == "sambaflow")]
        assert len(s) == 1
        return s.iloc[0]

    def test_sum_mean_slowest(self):
        r = self._row()
        assert r["instances"] == 8
        assert r["sum"] == approx(5278.341075661482)  # python sum of SEED_E2E
        assert round(r["sum"], 2) == 5278.34
        assert r["mean"] == approx(659.7926344576853)  # 5278.341075661482 / 8
        assert round(r["mean"], 2) == 659.79
        assert r["slowest_instance"] == "0"  # L82 is the smallest of the 8 values
        assert r["slowest_value"] == approx(563.9653143065)
        # the job figure is the mean over the instances, as SambaNova's docs compute it
        # (L79: 'The throughput is calculated by averaging the `e2e samples_per_sec` over
        # the different instances'); analysis.job, through the report's summary
        from dptrace.formats.trainlog import job
        s = job.series_figures(_summary_fn()(tp(SEED)), tp(SEED))
        row = s[s["pattern"].astype(str) == "sambaflow"].iloc[0]
        assert row["job_value"] == approx(659.7926344576853)
        assert row["job_how"] == "mean_of_instances"


# --------------------------------------------------------------------------------------
# SambaNova UNet2D (single instance)
# --------------------------------------------------------------------------------------

def test_unet2d_single_line():
    t = tp(UNET)
    # L58 'inner train loop time : 374.6789753437042 for 10 epochs, number of global steps: 130,
    #      e2e samples_per_sec: 88.82270474202953'
    assert t["value"].tolist() == [approx(88.82270474202953)]
    assert ints(t["lineno"]) == [58]
    assert t["instance"].tolist() == ["0"]  # SambaFlow's one line per instance
    assert t["scope"].astype(str).tolist() == ["instance"]


# --------------------------------------------------------------------------------------
# Graphcore poprun (mpirun --tag-output prefixes mid-line)
# --------------------------------------------------------------------------------------

class TestGraphcore:
    def test_generic_throughput_lines(self):
        g = rows(tp(GRAPHCORE), pattern="generic")
        # grep -n 'throughput:' -> L86 '[1,0]<stdout>:[INFO] throughput: 7599.7 samples/sec'
        #                          L92 '[1,0]<stdout>:[INFO] throughput: 8125.8 samples/sec'
        assert g["value"].tolist() == [approx(7599.7), approx(8125.8)]
        assert ints(g["lineno"]) == [86, 92]
        assert g["instance"].tolist() == ["0", "0"]  # '[1,0]' -> rank 0
        assert set(g["metric"].astype(str)) == {"samples_per_s"}
        assert set(g["scope"].astype(str)) == {"instance"}

    def test_tqdm_seconds_per_iteration_inverted(self):
        q = rows(tp(GRAPHCORE), pattern="tqdm")
        # L83 '75/78 [02:42<00:06,  2.05s/it]', L88 '78/78 [02:48<00:00,  2.16s/it]',
        # L94 '78/78 [02:37<00:00,  2.02s/it]'
        assert ints(q["lineno"]) == [83, 88, 94]
        assert q["value"].tolist() == [approx(1 / 2.05), approx(1 / 2.16), approx(1 / 2.02)]
        assert ints(q["step"]) == [75, 78, 78]
        assert set(q["metric"].astype(str)) == {"iterations_per_s"}

    def test_tqdm_instance_is_rank0(self):
        # JUDGEMENT: the only process is mpirun rank 0 (every tag in the file is '[1,0]');
        # the bars on L88/L94 are followed by '[1,0]<stderr>:' (the tag of the stream they were
        # written to), so they belong to instance "0", not to "0"/"1" by repetition.
        q = rows(tp(GRAPHCORE), pattern="tqdm")
        assert set(q["instance"]) == {"0"}

    def test_loss_lines(self):
        m = tm(GRAPHCORE)
        # L84 '[1,0]<stdout>:[INFO] loss: 6.7462,'  L90 '[1,0]<stdout>:[INFO] loss: 6.2720,'
        for ln, v in [(84, 6.7462), (90, 6.2720)]:
            hit = m[(m["lineno"] == ln) & (m["name"] == "loss")]
            assert hit["value"].tolist() == [approx(v)], ln
            assert hit["instance"].tolist() == ["0"]


# --------------------------------------------------------------------------------------
# HF Trainer via ezpz (two unprefixed copies of the run's output + metrics tables)
# --------------------------------------------------------------------------------------

class TestEzpzHfTrainer:
    def test_hf_trainer_dicts(self):
        h = rows(tp(EZPZ), pattern="hf_trainer")
        # L1249 {'train_runtime': 12.4474, 'train_samples_per_second': 154.249,
        #        'train_steps_per_second': 0.803, 'train_tokens_per_second': 822.661, ...,
        #        'epoch': 1.0, ...}
        # L1264 {'train_runtime': 27.2171, 'train_samples_per_second': 70.544,
        #        'train_steps_per_second': 0.367, 'train_tokens_per_second': 376.234, ...}
        got = {(int(r.lineno), r.name): (r.value, str(r.metric), bool(r.repeat))
               for r in h.itertuples()}
        assert got == {
            (1249, "train_samples_per_second"): (approx(154.249), "samples_per_s", False),
            (1249, "train_steps_per_second"): (approx(0.803), "steps_per_s", False),
            (1249, "train_tokens_per_second"): (approx(822.661), "tokens_per_s", False),
            # a second printer's copy with another value: not a repeat (no instance either:
            # neither line has a launcher prefix)
            (1264, "train_samples_per_second"): (approx(70.544), "samples_per_s", False),
            (1264, "train_steps_per_second"): (approx(0.367), "steps_per_s", False),
            (1264, "train_tokens_per_second"): (approx(376.234), "tokens_per_s", False),
        }
        assert h["instance"].isna().all()
        # HF's tokens per second are per device (TrainingArguments.include_tokens_per_second:
        # "the number of tokens per second per device"); samples and steps cover the job
        assert dict(zip(h["name"], h["scope"].astype(str), strict=False)) == {
            "train_samples_per_second": "global", "train_steps_per_second": "global",
            "train_tokens_per_second": "device"}
        assert h["epoch"].tolist() == [1.0] * 6  # 'epoch': 1.0 in both dicts

    def test_metrics_table(self):
        t = rows(tp(EZPZ), pattern="hf_metrics_table")
        # L1271 '  train_samples_per_second =     70.544'
        # L1272 '  train_steps_per_second   =      0.367'
        # L1273 '  train_tokens_per_second  =    376.234'
        assert ints(t["lineno"]) == [1271, 1272, 1273]
        assert t["name"].tolist() == ["train_samples_per_second", "train_steps_per_second",
                                      "train_tokens_per_second"]
        assert t["value"].tolist() == [approx(70.544), approx(0.367), approx(376.234)]
        assert t["metric"].astype(str).tolist() == ["samples_per_s", "steps_per_s",
                                                     "tokens_per_s"]
        # same meaning as the dict keys: tokens per device, the others the whole job
        assert t["scope"].astype(str).tolist() == ["global", "global", "device"]

    def test_eval_rates_are_not_throughput(self):
        t = tp(EZPZ)
        # L1250/L1274 eval dicts, L1281/L1282 '***** eval metrics *****' table
        assert not ({1250, 1274, 1281, 1282} & set(ints(t["lineno"])))
        assert not t["name"].str.startswith("eval_").any()

    def test_loss_rows(self):
        m = tm(EZPZ)
        loss = rows(m, name="loss")
        # grep -c "iter=[0-9]* loss=" -> 100 (L557 '[...][I][examples/minimal:61:__main__] iter=0
        # loss=2701.321045 dt=0.623345 ...' .. L656 'iter=99 loss=661.475586 ...')
        # grep -c "{'loss':" -> 20 (L1239-1248 and the repeated block L1254-1263)
        # (the ASCII loss plot around L685-710 and code/config lines carry no loss values)
        assert len(loss) == 120
        assert ints(loss["lineno"]) == (list(range(557, 657)) + list(range(1239, 1249))
                                        + list(range(1254, 1264)))
        it = loss[loss["lineno"] <= 656]
        assert it["value"].iloc[0] == approx(2701.321045)
        assert it["value"].sum() == approx(78962.905275)  # python sum of the 100 values
        hf = rows(loss, pattern="hf_trainer")
        assert len(hf) == 20
        # L1239 {'loss': 2.847, 'grad_norm': 3.8245272636413574, 'learning_rate': 5e-05,
        #        'epoch': 0.1, ...}
        first = hf.iloc[0]
        assert first["value"] == approx(2.847) and first["epoch"] == approx(0.1)
        # awk: sum of the 10 losses of one block = 29.7724 -> both blocks 59.5448
        assert hf["value"].sum() == approx(2 * 29.7724)
        assert len(rows(m, name="grad_norm")) == 20
        assert len(rows(m, name="learning_rate")) == 20
        assert rows(m, name="grad_norm", lineno=1239)["value"].tolist() == [
            approx(3.8245272636413574)]
        assert rows(m, name="learning_rate", lineno=1239)["value"].tolist() == [approx(5e-05)]

    def test_iter_lines_give_step(self):
        # JUDGEMENT: 'iter=N' is the iteration number the contract asks for in `step`
        # ("step/iteration number when the line gives one"); with distinct steps, one process
        # -> instance "0" throughout (not 0..99 by repetition of a step-less key).
        loss = rows(tm(EZPZ), name="loss")
        it = loss[loss["lineno"] <= 656]
        assert ints(it["step"]) == list(range(100))
        assert it["instance"].isna().all() and not it["repeat"].any()

    def test_hf_loss_rows_of_a_second_printer(self):
        # L1239-1248 and L1254-1263: the same ten loss dicts printed by two printers without
        # a prefix; no step on them, so neither copy is a repeat (nor an instance)
        loss = rows(tm(EZPZ), name="loss", pattern="hf_trainer")
        assert len(loss) == 20 and loss["instance"].isna().all()
        assert not loss["repeat"].any()


# --------------------------------------------------------------------------------------
# BigScience HF+DeepSpeed n16: final dict printed once per rank
# --------------------------------------------------------------------------------------

class TestHfN16:
    def test_samples_per_second_per_rank_copy(self):
        s = rows(tp(HF_N16), name="train_samples_per_second")
        # grep -n "'train_samples_per_second'" -> L482..L497 (16 lines)
        assert ints(s["lineno"]) == list(range(482, 498))
        assert s["instance"].isna().all()  # no launcher prefix
        # grep -o "'train_samples_per_second': [0-9.]*" | sort | uniq -c -> 13x1.196, 3x1.195
        # (the 1.195 ones on L488, L491, L495): a copy with a value seen before repeats it
        assert Counter(s["value"].tolist()) == {1.196: 13, 1.195: 3}
        assert ints(s.loc[~s["repeat"], "lineno"]) == [482, 488]
        assert set(s["scope"].astype(str)) == {"global"}
        assert set(s["metric"].astype(str)) == {"samples_per_s"}
        assert s["epoch"].tolist() == [1.0] * 16

    def test_steps_per_second(self):
        s = rows(tp(HF_N16), name="train_steps_per_second")
        # grep -c "'train_steps_per_second': 0.005" -> 16
        assert s["value"].tolist() == [approx(0.005)] * 16
        assert set(s["metric"].astype(str)) == {"steps_per_s"}

    def test_train_runtime_and_no_loss(self):
        m = tm(HF_N16)
        rt = rows(m, name="train_runtime_s")
        assert len(rt) == 16
        assert rows(rt, lineno=482)["value"].tolist() == [approx(836.394)]  # L482
        # no training loss is printed (only DeepSpeed 'loss scale' / 'loss_scale' config lines)
        assert len(rows(m, name="loss")) == 0


# --------------------------------------------------------------------------------------
# BigScience HF+DeepSpeed n4: tqdm with \r, 4 ranks, then close redraws
# --------------------------------------------------------------------------------------

# L1767 '\r  0%| ... 0/16 [00:00<?, ?it/s]\r  6%|...| 1/16 [00:58<14:41, 58.76s/it]\r ...'
HF_N4_L1767_SPIT = [58.76, 59.61, 59.72, 59.45, 59.80, 59.73, 59.78, 58.70, 57.92, 57.37,
                    56.98, 56.63, 56.44, 56.11, 55.88, 55.00]


class TestHfN4:
    def test_tqdm_rows_per_physical_line(self):
        q = rows(tp(HF_N4), pattern="tqdm")
        per_line = Counter(ints(q["lineno"]))
        assert per_line == {1767: 16, 1772: 16, 1777: 16, 1782: 16,
                            1791: 2, 1792: 2, 1793: 2, 1794: 2}

    def test_tqdm_values_first_bar(self):
        q = rows(tp(HF_N4), pattern="tqdm", lineno=1767)
        assert ints(q["step"]) == list(range(1, 17))
        assert q["value"].tolist() == [approx(1 / x) for x in HF_N4_L1767_SPIT]
        # python: mean(1/x) over the 16 rates of L1767
        assert q["value"].mean() == approx(0.017256858125889646)
        assert set(q["metric"].astype(str)) == {"iterations_per_s"}
        assert q["label"].isna().all()  # bar has no description
        assert q["instance"].isna().all()  # four unprefixed bars: printers unknown

    def test_tqdm_close_lines(self):
        q = rows(tp(HF_N4), pattern="tqdm", lineno=1793)
        # L1793 '\r<47 spaces>\r\r100%|...| 16/16 [15:19<00:00, 54.99s/it]\r100%|...| 16/16
        #        [15:19<00:00, 57.44s/it]'
        assert q["value"].tolist() == [approx(1 / 54.99), approx(1 / 57.44)]
        # the bar restarted (step 1 again on L1772, 1777, 1782) without an epoch: the
        # printed steps stay; 57.44 s/it is tqdm's close() redraw: a repeat
        assert ints(q["step"]) == [16, 16]
        assert q["repeat"].tolist() == [True, True]

    def test_tqdm_instances_of_step1(self):
        # step 1 is printed once per rank bar (L1767, L1772, L1777, L1782) -> instances 0..3
        q = rows(tp(HF_N4), pattern="tqdm", step=1)
        assert ints(q["lineno"]) == [1767, 1772, 1777, 1782]
        assert not q["repeat"].any()  # each starts a new pass of the bar, not a repeat
        # L1782's bar is the odd one: '1/16 [00:58<14:40, 58.70s/it]'
        assert q["value"].tolist() == [approx(1 / 58.76)] * 3 + [approx(1 / 58.70)]

    def test_hf_dicts_and_table(self):
        t = tp(HF_N4)
        h = rows(t, pattern="hf_trainer", name="train_samples_per_second")
        # L1787-1790 "'train_samples_per_second': 1.088"
        assert ints(h["lineno"]) == [1787, 1788, 1789, 1790]
        assert h["value"].tolist() == [approx(1.088)] * 4
        # four unprefixed copies with one value: the first counts, the others repeat it
        assert h["repeat"].tolist() == [False, True, True, True]
        tab = rows(t, pattern="hf_metrics_table")
        # L1820 '[INFO|trainer_pt_utils.py:912] ... >>   train_samples_per_second =      1.088'
        # L1821 '... >>   train_steps_per_second   =      0.017'
        assert ints(tab["lineno"]) == [1820, 1821]
        assert tab["value"].tolist() == [approx(1.088), approx(0.017)]
        assert tab["metric"].astype(str).tolist() == ["samples_per_s", "steps_per_s"]

    def test_no_loss(self):
        # grep -ni loss -> only TrainingArguments / DeepSpeed loss-scale config lines
        assert len(rows(tm(HF_N4), name="loss")) == 0


# --------------------------------------------------------------------------------------
# Megatron-LM (BigScience n64, ms) and older format (ZeRO n16)
# --------------------------------------------------------------------------------------

# grep -n ' iteration ' bigscience_megatron_n64_tp4_pp64.out:
# (lineno, iteration, elapsed ms, global batch size)
MEG_N64_ITERS = [(2049, 10, 19932.4, 4), (2051, 20, 6707.5, 4), (2309, 30, 6746.5, 4),
                 (2311, 40, 6736.4, 4), (2313, 50, 6715.3, 4), (2315, 60, 6703.7, 4)]


class TestMegatronN64:
    def test_step_time_is_not_a_throughput(self):
        # issue 14: 'elapsed time per iteration (ms)' is a step time (train_metrics
        # step_time_s), not an iterations_per_s throughput row
        assert rows(tp(MEG_N64), metric="iterations_per_s").empty
        st = rows(tm(MEG_N64), name="step_time_s")
        assert ints(st["lineno"]) == [r[0] for r in MEG_N64_ITERS]
        assert ints(st["step"]) == [r[1] for r in MEG_N64_ITERS]
        assert st["value"].tolist() == [approx(r[2] / 1000) for r in MEG_N64_ITERS]
        sp = rows(tp(MEG_N64), metric="samples_per_s")
        assert set(sp["name"]) == {"elapsed time per iteration"}
        assert set(sp["scope"].astype(str)) == {"global"}

    def test_samples_per_s_from_global_batch(self):
        sp = rows(tp(MEG_N64), metric="samples_per_s")
        assert ints(sp["step"]) == [10, 20, 30, 40, 50, 60]
        assert sp["value"].tolist() == [approx(4 / (r[2] / 1000)) for r in MEG_N64_ITERS]
        assert sp["value"].mean() == approx(0.5293424610187661)  # python over the 6 lines

    def test_single_printer(self):
        # no launcher prefix: the printer is unknown; all iterations distinct: no repeats
        t = tp(MEG_N64)
        assert t["instance"].isna().all() and not t["repeat"].any()

    def test_train_metrics(self):
        m = tm(MEG_N64)
        lm = rows(m, name="lm_loss")
        # 'lm loss:' only on iterations 20..60 (absent at 10: all skipped)
        assert ints(lm["step"]) == [20, 30, 40, 50, 60]
        assert lm["value"].tolist() == [approx(14.12743), approx(76.76836), approx(31.69739),
                                        approx(21.14738), approx(16.9694)]
        gn = rows(m, name="grad_norm")
        assert ints(gn["step"]) == [30, 40, 50, 60]  # 'grad norm:' from iteration 30 on
        assert gn["value"].tolist() == [approx(126.963), approx(13.641), approx(13.290),
                                        approx(14.171)]
        assert rows(m, name="loss_scale", step=10)["value"].tolist() == [approx(8388608.0)]
        assert len(rows(m, name="loss_scale")) == 6
        assert len(rows(m, name="learning_rate")) == 6
        assert rows(m, name="step_time_s", step=10)["value"].tolist() == [approx(19.9324)]


class TestMegatronZeroOldFormat:
    def test_step_times_only(self):
        # L6103 'iteration 1/1000 | elapsed time per iteration (ms): 123742.4 | ...'
        # L6107 128917.0, L6110 128642.7, L6113 127766.0; no 'global batch size' field: no
        # throughput row, only step times
        assert tp(MEG_ZERO).empty
        t = rows(tm(MEG_ZERO), name="step_time_s")
        assert ints(t["step"]) == [1, 2, 3, 4]
        assert ints(t["lineno"]) == [6103, 6107, 6110, 6113]
        assert t["value"].tolist() == [approx(123.7424), approx(128.917), approx(128.6427),
                                       approx(127.766)]

    def test_lm_loss(self):
        lm = rows(tm(MEG_ZERO), name="lm_loss")
        assert lm["value"].tolist() == [approx(12.52221), approx(12.51770), approx(40.75232),
                                        approx(38.99556)]


# --------------------------------------------------------------------------------------
# Megatron-DeepSpeed GPT-3 125M (DeepSpeed old '0/10' timer + Megatron ms lines)
# --------------------------------------------------------------------------------------

class TestMegatronDeepSpeed8gpu:
    def test_deepspeed_timer_old_format(self):
        t = tp(MDS_8)
        cur = rows(t, pattern="deepspeed", name="CurrSamplesPerSec")
        run = rows(t, pattern="deepspeed", name="RunningAvgSamplesPerSec")
        # grep -n SamplesPerSec: L2703 '... 0/10, RunningAvgSamplesPerSec=357.38655790272156,
        #   CurrSamplesPerSec=358.42529475384885, ...' ... L2751 '0/120, ...'
        assert ints(cur["step"]) == list(range(10, 130, 10))
        assert ints(run["step"]) == list(range(10, 130, 10))
        assert cur["lineno"].iloc[0] == 2703 and cur["lineno"].iloc[-1] == 2751
        assert cur["value"].iloc[0] == approx(358.42529475384885)
        assert run["value"].iloc[0] == approx(357.38655790272156)
        # python: mean of the 12 CurrSamplesPerSec / RunningAvgSamplesPerSec values
        assert cur["value"].mean() == approx(357.1779335646384)
        assert run["value"].mean() == approx(357.8408411297919)
        assert cur["value"].min() == approx(348.1030062064118)  # L2732, 0/80
        assert set(cur["scope"].astype(str)) == {"global"}
        assert set(cur["metric"].astype(str)) == {"samples_per_s"}

    def test_megatron_lines(self):
        meg = rows(tp(MDS_8), pattern="megatron")
        assert rows(meg, metric="iterations_per_s").empty  # a step time is not a rate
        it = rows(tm(MDS_8), name="step_time_s")
        sp = rows(meg, metric="samples_per_s")
        assert ints(it["step"]) == list(range(10, 130, 10))
        # L2705 'elapsed time per iteration (ms): 942.0 | ... | global batch size:   256 |'
        assert it["value"].iloc[0] == approx(0.942)
        assert sp["value"].iloc[0] == approx(256 / 0.942)
        # python over the 12 lines: mean(1000/ms), mean(256/(ms/1000))
        assert (1 / it["value"]).mean() == approx(1.6050839108473234)
        assert sp["value"].mean() == approx(410.9014811769148)

    def test_lm_loss_excludes_validation(self):
        lm = rows(tm(MDS_8), name="lm_loss")
        # 12 iteration lines carry 'lm loss:'; L2744 ' validation loss at iteration 100 |
        # lm loss value: 9.082474E+00 |' is validation.
        # JUDGEMENT: validation loss must not be reported under the training name lm_loss.
        assert len(lm) == 12
        assert lm["value"].iloc[0] == approx(10.69112)  # L2705 'lm loss: 1.069112E+01'
        assert lm["value"].sum() == approx(117.617041)  # python sum of the 12


class TestMegatronDeepSpeedRandomLtd:
    def test_deepspeed_rows(self):
        cur = rows(tp(MDS_RLTD), name="CurrSamplesPerSec")
        assert len(cur) == 47
        assert ints(cur["step"]) == list(range(10, 480, 10))
        # L2738 '0/10, RunningAvgSamplesPerSec=428.0729589385703,
        #        CurrSamplesPerSec=431.9529870656501'
        assert cur["value"].iloc[0] == approx(431.9529870656501)
        assert cur["value"].mean() == approx(424.5712750742765)  # python over 47

    def test_malformed_separator_does_not_lose_fields(self):
        # L2740 '... | global batch size:   256 |reserve_length:   256 | lm loss:
        #        1.078335E+01 | ...'
        meg = rows(tp(MDS_RLTD), pattern="megatron")
        sp = rows(meg, metric="samples_per_s")
        assert len(sp) == 47
        assert sp["value"].iloc[0] == approx(256 / 1.0015)  # 'elapsed ... (ms): 1001.5'
        assert sp["value"].mean() == approx(501.57644590728273)  # python over 47
        lm = rows(tm(MDS_RLTD), name="lm_loss")
        assert len(lm) == 47
        assert lm["value"].iloc[0] == approx(10.78335)
        assert lm["value"].sum() == approx(429.74716699999993)


# --------------------------------------------------------------------------------------
# BLOOM-176B chronicles: [default7]: prefix, seconds, hard-wrapped lines
# --------------------------------------------------------------------------------------

# python /tmp helper (joins a wrapped record with its continuation lines):
# (first physical line, iteration, elapsed s, 'samples per second', lm loss, grad norm)
BLOOM_RECS = [
    (45, 12695, 105.22, 19.463, 2.463556, 0.174),
    (202, 31214, 106.46, 19.238, 2.198845, 0.242),
    (203, 31215, 105.90, 19.338, 2.220424, 0.947),
    (204, 31216, 106.40, 19.248, 2.595213, 2.390),
    (205, 31217, 106.33, 19.260, 2.241558, 15.886),
    (206, 31218, 107.53, 19.046, 2.345279, 145.119),
    (207, 31219, 106.36, 19.256, 5.098124, 960.351),
    (208, 31220, 106.30, 19.266, 3.492029, 353.201),
    (209, 31221, 106.13, 19.297, 3.213059, 379.330),
    (210, 31222, 106.44, 19.240, 2.804948, 650.246),
    (212, 31250, 106.09, 19.304, 2.215699, 0.267),
    (213, 31251, 106.13, 19.297, 2.235667, 0.205),
    (257, 42780, 105.16, 19.474, 2.117073, 0.150),
    (260, 42781, 105.17, 19.473, 2.116946, 0.140),
    (263, 42782, 106.25, 19.276, 2.110646, 0.144),
    (266, 42783, 110.17, 18.589, 2.124820, 0.135),
    (269, 42784, 111.14, 18.428, 2.127643, 0.127),
    (303, 45000, 111.00, 18.451, 2.113567, 0.139),
]


class TestBloomChronicles:
    def test_instance_from_torchrun_prefix(self):
        # JUDGEMENT: L45 is ' [default7]: ...' (one leading space of markdown indentation);
        # it is still the torchrun prefix.
        assert set(tp(BLOOM)["instance"]) == {"default7"}

    def test_printed_samples_per_second(self):
        s = rows(tp(BLOOM), name="samples per second")
        assert ints(s["step"]) == [r[1] for r in BLOOM_RECS]
        assert s["value"].tolist() == [approx(r[3]) for r in BLOOM_RECS]
        assert set(s["metric"].astype(str)) == {"samples_per_s"}
        assert s["value"].mean() == approx(19.163555555555558)  # python over 18

    def test_elapsed_seconds(self):
        # every record prints 'samples per second': no second samples_per_s from gbs / time,
        # and the step time is train_metrics step_time_s, not an iterations_per_s row
        assert rows(tp(BLOOM), name="elapsed time per iteration").empty
        it = rows(tm(BLOOM), name="step_time_s")
        assert ints(it["step"]) == [r[1] for r in BLOOM_RECS]
        assert it["value"].tolist() == [approx(r[2]) for r in BLOOM_RECS]  # (s), not ms

    def test_wrapped_lines_joined(self):
        t = tp(BLOOM)
        # L266 '[default7]: iteration   42783/ 115311 | ... | elapsed time per iteration (s):
        #       110.17 | learning' / L267 ' rate: 4.475E-05 | global batch size: 2048 | ...' /
        # L268 'iterations:  0 | samples per second: 18.589 | TFLOPs: 142.32 |'
        r = rows(t, step=42783)
        assert len(r) == 1  # 'samples per second' comes from a continuation line
        assert rows(tm(BLOOM), name="global_batch_size", step=42783)["value"].tolist() == [2048]
        # JUDGEMENT: a joined record carries the line number of its first physical line
        assert set(ints(r["lineno"])) == {266}
        assert not ({258, 259, 261, 262, 264, 265, 267, 268, 270, 271} & set(ints(t["lineno"])))

    def test_train_metrics(self):
        m = tm(BLOOM)
        lm = rows(m, name="lm_loss")
        # JUDGEMENT: L305 '[default7]:valid loss at iteration 45000 | lm loss value: ...' is a
        # validation loss and is not a training lm_loss
        assert ints(lm["step"]) == [r[1] for r in BLOOM_RECS]
        assert lm["value"].tolist() == [approx(r[4]) for r in BLOOM_RECS]
        # L258 (continuation of L257) ' rate: 4.475E-05 | ... | lm loss: 2.117073E+00 | grad
        # norm: 0.150 | ...'
        assert rows(lm, step=42780)["value"].tolist() == [approx(2.117073)]
        gn = rows(m, name="grad_norm")
        assert rows(gn, step=31219)["value"].tolist() == [approx(960.351)]
        assert rows(m, name="step_time_s", step=42783)["value"].tolist() == [approx(110.17)]


# --------------------------------------------------------------------------------------
# Bagua synthetic benchmark (Horovod-style, 'img/sec GPU' quirk)
# --------------------------------------------------------------------------------------

# grep -n 'Iter #' bagua_net_synthetic_benchmark_from_docs.md
BAGUA_NCCL = [2620.2, 2771.9, 2772.6, 2794.5, 2627.9, 2787.8, 2775.9, 2741.6, 2760.0, 2796.6]
BAGUA_NET = [4081.0, 4072.0, 4106.4, 4081.7, 4064.8, 4122.1, 3857.7, 4128.3, 4125.5, 3826.6]


class TestBagua:
    def test_iter_lines_are_global_totals(self):
        it = rows(tp(BAGUA), pattern="horovod_benchmark").dropna(subset=["step"])
        assert ints(it["lineno"]) == list(range(12, 22)) + list(range(27, 37))
        assert ints(it["step"]) == list(range(10)) * 2
        assert it["value"].tolist() == [approx(v) for v in BAGUA_NCCL + BAGUA_NET]
        assert set(it["scope"].astype(str)) == {"global"}  # total, see provenance note
        assert set(it["metric"].astype(str)) == {"images_per_s"}
        # the second run's 'Iter #0' restarts the count: a new pass, not repeats
        assert it["instance"].isna().all() and not it["repeat"].any()

    def test_iter_name_as_printed(self):
        # JUDGEMENT: name is the key as printed; the quirk prints 'img/sec GPU' (no 'per')
        it = rows(tp(BAGUA), pattern="horovod_benchmark").dropna(subset=["step"])
        assert set(it["name"]) == {"img/sec GPU"}

    def test_summary_lines(self):
        t = tp(BAGUA)
        per_gpu = t[t["name"].str.lower() == "img/sec per gpu"]
        # L22 'Img/sec per GPU: 85.8 +-3.8', L37 'Img/sec per GPU: 126.5 +-6.4'
        # JUDGEMENT: the name's capitalisation is not pinned ('Img/sec' printed vs the
        # contract's 'img/sec per GPU'), so it is compared case-insensitively.
        assert ints(per_gpu["lineno"]) == [22, 37]
        assert per_gpu["value"].tolist() == [approx(85.8), approx(126.5)]
        assert set(per_gpu["scope"].astype(str)) == {"device"}
        tot = rows(t, name="Total img/sec")
        # L23 'Total img/sec on 32 GPU(s): 2744.9 +-122.3', L38 '... 4046.6 +-205.2'
        assert ints(tot["lineno"]) == [23, 38]
        assert tot["value"].tolist() == [approx(2744.9), approx(4046.6)]
        assert set(tot["scope"].astype(str)) == {"global"}


# --------------------------------------------------------------------------------------
# Keras TimeHistory (per-rank stderr file)
# --------------------------------------------------------------------------------------

class TestKerasTimeHistory:
    def test_rows(self):
        k = rows(tp(KERAS), pattern="keras")
        # grep -noE 'TimeHistory: ... examples/second between steps A and B':
        # L240 '22.03 seconds, 0.09 examples/second between steps 0 and 1'
        # L244 '0.06 seconds, 36.16 examples/second between steps 1 and 2'
        # L760 '0.22 seconds, 9202.35 examples/second between steps 109 and 110'
        assert ints(k["step"]) == list(range(1, 111))  # always B = A + 1, B = 1..110
        assert rows(k, lineno=240)["value"].tolist() == [approx(0.09)]
        assert rows(k, lineno=244)["value"].tolist() == [approx(36.16)]
        assert rows(k, lineno=760)["value"].tolist() == [approx(9202.35)]
        assert k["value"].sum() == approx(291572.29)  # python sum over 110
        assert k["value"].mean() == approx(2650.6571818181815)
        assert set(k["metric"].astype(str)) == {"samples_per_s"}
        # TF official models give TimeHistory the global batch (per-replica 'Input shape =
        # [16 ...]' for batch 32, L440-460): the rate covers the job
        assert set(k["scope"].astype(str)) == {"global"}
        assert set(k["instance"]) == {"0"}  # the file's path: rank.0/stderr
        assert set(k["name"]) == {"examples/second"}


# --------------------------------------------------------------------------------------
# Logs without throughput lines: loss only
# --------------------------------------------------------------------------------------

class TestHorovodTf2Cpu:
    def test_loss_and_epoch_time(self):
        m = tm(HVD_TF2)
        loss = rows(m, name="loss")
        # L82..L91 'Epoch: N \tLoss: x \tTime/epoch: y'
        assert ints(loss["lineno"]) == list(range(82, 92))
        assert loss["epoch"].tolist() == [float(e) for e in range(10)]
        assert loss["value"].iloc[0] == approx(55.910)
        assert loss["value"].mean() == approx(16.8202)  # awk: 168.202 / 10
        et = rows(m, name="epoch_time_s")
        assert len(et) == 10
        assert rows(et, epoch=0.0)["value"].tolist() == [approx(5.76)]
        assert rows(et, epoch=5.0)["value"].tolist() == [approx(3.3)]  # L87 'Time/epoch: 3.3'


class TestHorovodCifar10:
    TRAIN_LINE = re.compile(r"^\[(\d)\] Train Epoch: (\d+) \[\d+/\d+ \(\d+%\)\]\tLoss: ([\d.]+)$")

    @staticmethod
    def _lines():
        text = (FIX / HVD_CIFAR).read_text(encoding="utf-8")
        return list(enumerate(text.split("\n"), 1))

    def test_per_rank_loss(self):
        # grep -nE '^\[[0-9]\] Train Epoch: [0-9]+ \[[0-9]+/[0-9]+ \([0-9]+%\)\]\tLoss: ' -> 800
        # lines, 100 per rank 0..7, epochs 1..10 (80 lines each)
        train_lines = [ln for ln, t in self._lines() if self.TRAIN_LINE.match(t)]
        assert len(train_lines) == 800
        loss = rows(tm(HVD_CIFAR), name="loss")
        train = loss[loss["lineno"].isin(train_lines)]
        assert len(train) == 800 and train["lineno"].is_unique  # one 'loss' per line
        assert Counter(train["instance"]) == {str(r): 100 for r in range(8)}
        assert Counter(train["epoch"]) == {float(e): 80 for e in range(1, 11)}
        # L19 '[2] Train Epoch: 1 [0/6250 (0%)]\tLoss: 0.035994'
        first = rows(train, lineno=19).iloc[0]
        assert first["instance"] == "2" and first["value"] == approx(0.035994)
        assert first["epoch"] == 1.0
        # L845 '[2] Train Epoch: 10 [5760/6250 (92%)]\tLoss: 0.024540'
        assert rows(train, lineno=845)["value"].tolist() == [approx(0.024540)]
        # awk '{s+=$2}' over grep -o 'Loss: [0-9.]+$' -> 800 values, sum 23.470549
        assert train["value"].sum() == approx(23.470549)
        # python: rank 3 mean over its 100 lines
        assert rows(train, instance="3")["value"].mean() == approx(0.029537210000000008)

    def test_test_set_loss_is_not_training_loss(self):
        # 'Test set: Average loss: 0.0368, Accuracy: 10.00%' (L100, L183, ...): evaluation
        # JUDGEMENT: not a training 'loss' row ('Training set: Average loss' is left open).
        m = tm(HVD_CIFAR)
        test_lines = [ln for ln, text in self._lines() if text.startswith("Test set:")]
        assert len(test_lines) == 10
        assert len(m[(m["name"] == "loss") & m["lineno"].isin(test_lines)]) == 0


def test_cipherdoc_crash_losses():
    m = tm(CIPHER)
    loss = rows(m, name="loss")
    # L25-28 'Loss:  6.892791197850154' etc. (4 ranks, unprefixed)
    assert ints(loss["lineno"]) == [25, 26, 27, 28]
    assert loss["value"].tolist() == [approx(6.892791197850154), approx(6.89337315926185),
                                      approx(6.890369378603422), approx(6.9028233748215895)]


def test_cipherdoc_crash_loss_rows():
    # four unprefixed loss lines (mpirun -np 4 without --tag-output): the printers are
    # unknown, and lines without a step are never repeats
    loss = rows(tm(CIPHER), name="loss")
    assert len(loss) == 4 and loss["instance"].isna().all() and not loss["repeat"].any()


class TestMlprofDdp:
    # grep -n '\[TRAIN\]' -> (lineno, epoch, took s, loss); epochs 5 and 10 are not logged
    TRAIN = [(91, 1, 1.1131, 0.00442443), (100, 2, 0.5684, 0.00185311),
             (109, 3, 0.5704, 0.00120192), (118, 4, 0.5662, 0.00086516),
             (130, 6, 0.5659, 0.00058246), (139, 7, 0.5677, 0.00050215),
             (148, 8, 0.5723, 0.00043914), (157, 9, 0.5638, 0.00040239)]

    def test_epoch_loss(self):
        loss = rows(tm(MLPROF_DDP), name="loss")
        # JUDGEMENT: per-step 'batch_loss=' / 'running_loss=' keep their own names, so the
        # rows named exactly 'loss' are the 8 '[TRAIN]  epoch N took: Xs  loss=...' lines.
        assert ints(loss["lineno"]) == [r[0] for r in self.TRAIN]
        assert loss["epoch"].tolist() == [float(r[1]) for r in self.TRAIN]
        assert loss["value"].tolist() == [approx(r[3]) for r in self.TRAIN]

    def test_per_step_batch_loss(self):
        m = tm(MLPROF_DDP)
        # L68 '... - [0] [1/10: 0/3750 (0%)] epoch=1.0000 step=1.0000 dt=0.3544
        #      batch_acc=0.1172 batch_loss=0.0091 acc=0.0080 running_loss=0.0006'
        hit = rows(m, lineno=68, name="batch_loss")  # JUDGEMENT: name as printed
        assert hit["value"].tolist() == [approx(0.0091)]
        assert ints(hit["step"]) == [1] and hit["epoch"].tolist() == [1.0]
        # grep -c 'dt=' -> 30 per-step lines
        assert len(rows(m, name="batch_loss")) == 30


class TestMlprofDeepSpeed:
    def test_deepspeed_timer(self):
        t = tp(MLPROF_DS)
        cur = rows(t, pattern="deepspeed", name="CurrSamplesPerSec")
        # grep -n SamplesPerSec: L933 'epoch=0/micro_step=10/global_step=10,
        #   RunningAvgSamplesPerSec=835.1041362371457, CurrSamplesPerSec=627.0567173104595' ...
        #   L4537 global_step=150
        assert ints(cur["step"]) == list(range(10, 160, 10))
        assert cur["value"].iloc[0] == approx(627.0567173104595)
        assert cur["value"].mean() == approx(614.6879207078169)  # python over 15
        assert cur["value"].min() == approx(573.9037747789351)  # L2481 global_step=70
        assert set(cur["epoch"]) == {0.0}  # 'epoch=0/...' on every line
        run = rows(t, pattern="deepspeed", name="RunningAvgSamplesPerSec")
        assert run["value"].iloc[-1] == approx(925.0233671942834)  # L4537

    def test_flops_profiler(self):
        f = rows(tp(MLPROF_DS), pattern="deepspeed_flops")
        # L693 'samples/second:                                               853.56  '
        assert f["value"].tolist() == [approx(853.56)]
        assert ints(f["lineno"]) == [693]
        assert f["scope"].astype(str).tolist() == ["global"]
        assert f["metric"].astype(str).tolist() == ["samples_per_s"]

    def test_training_bar(self):
        q = rows(tp(MLPROF_DS), pattern="tqdm")
        # '\rTraining:  10%|█ | 1/10 [00:02<00:21,  2.43s/it][2023-05-15 ...' (log text glued on)
        assert ints(q["lineno"]) == [1068, 1456, 1842, 2230, 2610, 2998, 3384, 3772, 4158,
                                     4540, 4540]
        assert ints(q["step"]) == list(range(1, 11)) + [10]
        spit = [2.43, 2.28, 2.17, 2.12, 1.62, 1.76, 1.85, 1.92, 1.96, 1.58, 1.83]
        assert q["value"].tolist() == [approx(1 / x) for x in spit]
        assert set(q["label"]) == {"Training"}

    def test_training_bar_close_redraw_is_a_repeat(self):
        # L4540 holds two \r-updates of the same bar: 10/10 at 1.58s/it, then tqdm's close()
        # redraw of 10/10 at 1.83s/it (the whole bar's average): kept, flagged as a repeat
        q = rows(tp(MLPROF_DS), pattern="tqdm")
        assert q["repeat"].tolist() == [False] * 10 + [True]

    def test_epoch_loss(self):
        loss = rows(tm(MLPROF_DS), name="loss")
        # grep -n '\[TRAIN\]' -> L1066 'epoch 1 took: 1.1049s  loss=0.00034475' ... 8 lines
        assert ints(loss["lineno"]) == [1066, 1454, 1840, 2228, 2996, 3382, 3770, 4156]
        assert loss["value"].tolist() == [approx(v) for v in (
            0.00034475, 0.00010681, 0.00006264, 0.00004768, 0.00003052, 0.00002563,
            0.00002712, 0.00002015)]


def test_mlprof_comms_logger_epoch_losses_with_ansi():
    loss = rows(tm(MLPROF_COMMS), name="loss")
    # grep -n '\[TRAIN\]' -> '...\x1b[32mINFO\x1b[0m] - [TRAIN]  loss=0.0006  acc=20%\x1b[0m'
    assert ints(loss["lineno"]) == [293, 311, 329, 347, 377, 409, 427, 445]
    assert loss["value"].tolist() == [approx(v) for v in (
        0.0006, 0.0002, 0.0002, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001)]


# --------------------------------------------------------------------------------------
# DeepSpeed-Chat
# --------------------------------------------------------------------------------------

class TestDsChatStep1:
    def test_timer_rows(self):
        t = tp(DSCHAT1)
        cur = rows(t, name="CurrSamplesPerSec")
        run = rows(t, name="RunningAvgSamplesPerSec")
        assert len(cur) == 736 and len(run) == 736
        # L13 'epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.4455644119137,
        #      CurrSamplesPerSec=171.97903593624417, ...'
        assert ints(cur["lineno"])[:1] == [13] and ints(cur["step"])[:1] == [10]
        assert cur["value"].iloc[0] == approx(171.97903593624417)
        assert run["value"].iloc[0] == approx(173.4455644119137)
        # L1661 'epoch=15/micro_step=460/global_step=7360, ...'
        assert ints(cur["lineno"])[-1] == 1661 and ints(cur["step"])[-1] == 7360
        assert cur["epoch"].iloc[-1] == 15.0
        # grep -o 'epoch=[0-9]*/' | sort | uniq -c -> 46 lines in each of epochs 0..15
        assert Counter(cur["epoch"]) == {float(e): 46 for e in range(16)}
        # python over the 736 lines
        assert cur["value"].sum() == approx(126438.16874122882)
        assert cur["value"].mean() == approx(171.79099013753915)
        assert cur["value"].min() == approx(169.34468415300202)  # L788, global_step=3480
        assert run["value"].mean() == approx(171.7533713896479)
        assert set(t["scope"].astype(str)) == {"global"}
        assert not t["repeat"].any()  # every global_step distinct

    def test_no_loss_rows(self):
        # only 'ppl:' evals and 'OVERFLOW! ... Attempted loss scale' lines
        assert len(rows(tm(DSCHAT1), name="loss")) == 0


class TestDsChatCheck7b:
    def test_label_counts(self):
        q = tp(DSCHAT7B)
        lab = q["label"].astype("object")
        # helper enumeration (see EXPECTED_PATTERNS), every update a row
        assert (lab == "Downloading shards").sum() == 48  # L561 16, L730-742/745 2 each,
        #                                                   L743 3, L744 1
        assert (lab == "Loading checkpoint shards").sum() == 48  # L747 18, 15 lines x 2
        assert lab.fillna("").str.contains("safetensors").sum() == 645  # the 2 shard downloads
        assert lab.isna().sum() == 2  # L765 '2/2 ... 354.85it/s', L767 '... 313.99it/s'

    def test_shard_rates(self):
        q = tp(DSCHAT7B)
        sh = q[q["label"].astype("object") == "Downloading shards"]
        assert set(sh["metric"].astype(str)) == {"iterations_per_s"}
        # L561 first update '1/2 [01:07<01:07, 67.24s/it]'; L744 '2/2 [01:31<00:00, 45.54s/it]'
        assert sh["value"].iloc[0] == approx(1 / 67.24)
        assert rows(sh, lineno=744)["value"].tolist() == [approx(1 / 45.54)]
        nolabel = q[q["label"].isna()]
        assert nolabel["value"].tolist() == [approx(354.85), approx(313.99)]

    def test_byte_rates_scaled(self):
        # JUDGEMENT: tqdm unit_scale prefixes are SI (x1000): L85 '10.5M/9.98G [00:00<02:09,
        # 77.2MB/s]' -> 77.2e6 bytes/s; metric named after the unit.
        q = tp(DSCHAT7B)
        r = rows(q, lineno=85)
        assert r["value"].tolist() == [approx(77.2e6)]
        assert set(r["metric"].astype(str)) <= {"B_per_s", "bytes_per_s"}

    def test_no_loss_rows(self):
        assert len(rows(tm(DSCHAT7B), name="loss")) == 0
