"""Issue 14's line recognisers: launcher prefixes, scope per line, step times, phases, world
sizes and run headers; each through ``read_trainlog`` with both engines (``fast``: the
lines of tqdm updates read at once with pyarrow.compute; ``general``: Python only), and the
headers through the scanner.

Lines are real unless said otherwise: ``../shared/realdata`` logs (file and line named), the
lines quoted in issue 14, and Lightning's RichProgressBar column layout (its source:
``description  bar  completed/total  elapsed • remaining  {speed:.2f}it/s  metrics``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import schema
from dptrace.formats.trainlog import fast as trainlog_fast
from dptrace.formats.trainlog import general, rules

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "shared" / "realdata"
ENGINES = ["general", "fast"]


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    return request.param


def fast_read(raw: bytes) -> tuple[bool, pd.DataFrame, pd.DataFrame]:
    """What the fast engine's reader of tqdm lines makes of one line: whether it read it
    (else it declined, adding nothing, and the scanner reads it), and its rows."""
    buf = raw + b"\n"
    found = trainlog_fast.Found()
    found.read(buf, 0, len(buf), 1)
    starts = found.lines_read()
    tp = trainlog_fast.frame([], found, "tp", rules.TP_COLS)
    tm = trainlog_fast.frame([], found, "tm", rules.TM_COLS)
    return bool(len(starts)), tp, tm


def read(tmp_path: Path, text: str, engine: str, name: str = "slurm-14.out") -> dptrace.Dataset:
    p = tmp_path / name
    p.write_bytes(text.encode())
    ds = dptrace.read_trainlog(p, engine=engine)
    other = dptrace.read_trainlog(p, engine="general" if engine == "fast" else "fast")
    for table in ("throughput", "train_metrics"):   # both engines: the very same rows
        pd.testing.assert_frame_equal(ds[table], other[table], check_exact=True)
    return ds


def scan(text: str) -> rules.Rows:
    """The rows (and headers) the scanner collects from ``text``."""
    rows = rules.Rows()
    buf = text.encode()
    general._Scanner(buf, "x", rows, [], 0, len(buf)).run()
    return rows


def records(df: pd.DataFrame, *cols: str) -> list[tuple]:
    return [tuple(None if pd.isna(v) else v for v in r) for r in df[list(cols)].itertuples(
        index=False)]


# --- 1. launcher prefixes ----------------------------------------------------------------------

# torchtitan (realdata trainlog/torchtitan_multirank_duplicate_lines_from_issue.md, PR 1287)
TITAN = ("[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  "
         "memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%\n")


def test_rank_colon_prefix_is_a_global_rank(tmp_path, engine):
    text = TITAN + TITAN.replace("[rank0]", "[rank3]").replace("6.1384", "6.2")
    tm = read(tmp_path, text, engine)["train_metrics"]
    loss = tm[tm["name"] == "loss"]
    assert records(loss, "instance", "rank", "name", "value") == [
        ("0", 0, "loss", 6.1384), ("3", 3, "loss", 6.2)]
    tp = read(tmp_path, text, engine)["throughput"]  # torchtitan's tps: tokens/s per device
    assert records(tp, "instance", "rank", "metric", "value", "scope", "step") == [
        ("0", 0, "tokens_per_s", 5856.0, "device", 200),
        ("3", 3, "tokens_per_s", 5856.0, "device", 200)]


def test_rank_space_prefix_and_torchrun_role_kept(tmp_path, engine):
    text = ("[rank5] throughput: 1816.6 samples/sec/rank\n"
            "[default3]:[INFO] throughput: 7599.7 samples/sec\n")
    tp = read(tmp_path, text, engine)["throughput"]
    assert records(tp, "instance", "rank") == [("5", 5), ("default3", None)]


def test_rank_prefix_on_tqdm_lines_both_engines(tmp_path, engine):
    # a tqdm line of \r updates: the fast engine finds the prefix once per distinct head
    line = ("[rank2]:Training:  50%|#####     | 5/10 [00:05<00:05,  1.01it/s]"
            "\r[rank2]:Training:  60%|######    | 6/10 [00:06<00:04,  1.50it/s]\n"
            "[rank7] Training:  60%|######    | 6/10 [00:06<00:04,  1.40it/s]"
            "\r 70%|#######   | 7/10 [00:07<00:03,  1.45it/s]\n")
    tp = read(tmp_path, line, engine)["throughput"]
    assert records(tp, "instance", "rank", "step", "value") == [
        ("2", 2, 5, 1.01), ("2", 2, 6, 1.5), ("7", 7, 6, 1.4), ("7", 7, 7, 1.45)]


def test_fast_prefix_finder_agrees_on_rank_tags():
    for text in ["[rank3]:x", "[rank3] x", "[rank3]\tx", "[rank3]x", "[rank]:x", "[ranks3]:x",
                 "[rank12345678]:x", "[Rank3]:x", " [rank0]:x", "[default3]:x", "[rank3]"]:
        # the second update has no prefix of its own: the line's
        line = text + "Epoch 1: 5/10 [00:01<00:01, 4.50it/s]\r6/10 [00:01<00:01, 4.50it/s]"
        rows = rules.Rows()
        assert general._tqdm_updates(line, general._split_prefix(line)[0], 1, 0, rows)
        read_it, tp, _ = fast_read(line.encode())
        assert read_it and tp["prefix"].astype(object).tolist() == [r[0] for r in rows.tp], text


# --- 2. scope per line, missed lines ------------------------------------------------------------

@pytest.mark.parametrize(("line", "value", "scope"), [
    ("throughput: 1816.6 samples/sec/rank", 1816.6, "device"),      # issue 14
    ("throughput per GPU: 1816.6 samples/sec", 1816.6, "device"),
    ("[INFO] 112.5 samples/sec per device", 112.5, "device"),
    ("speed: 4100.2 tokens/s/gpu", 4100.2, "device"),
    ("global 3633.1 samples/sec", 3633.1, "global"),                # issue 14
    ("step 20 samples/sec(global)=525.3", 525.3, "global"),         # issue 14, unit first
    ("epoch 1 | samples/sec 2249.7 | loss 0.3", 2249.7, "instance"),  # issue 14, unit first
    ("[INFO] throughput: 7599.7 samples/sec", 7599.7, "instance"),  # realdata graphcore L86
])
def test_generic_scope_from_the_line(tmp_path, engine, line, value, scope):
    tp = read(tmp_path, line + "\n", engine)["throughput"]
    assert records(tp, "pattern", "value", "scope") == [("generic", value, scope)]


def test_total_img_sec_is_global_and_per_gpu_device(tmp_path, engine):
    # realdata scaling/oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md L82-83
    text = ("[1,0]<stdout>:Img/sec per GPU: 600.2 +-5.3\n"
            "[1,0]<stdout>:Total img/sec on 8 GPU(s): 4801.4 +-42.7\n")
    tp = read(tmp_path, text, engine)["throughput"]
    assert records(tp, "name", "scope", "instance") == [
        ("Img/sec per GPU", "device", "0"), ("Total img/sec", "global", "0")]


HF_DICT = ("{'train_runtime': '5.071', 'train_samples_per_second': '201.9', "
           "'train_steps_per_second': '11.83', 'train_loss': '2.1', 'epoch': '3.0'}")


def test_hf_dict_after_a_bar_takes_the_tag_before_it(tmp_path, engine):
    # issue 14: the dict follows the bar on its line, after a torchrun tag; numbers quoted
    text = ("[default1]:100%|##########| 60/60 [00:04<00:00, 13.93it/s][default0]:" + HF_DICT
            + "\n")
    ds = read(tmp_path, text, engine)
    assert records(ds["throughput"], "instance", "pattern", "name", "value", "scope", "epoch") == [
        ("default1", "tqdm", "tqdm", 13.93, "instance", None),
        ("default0", "hf_trainer", "train_samples_per_second", 201.9, "global", 3.0),
        ("default0", "hf_trainer", "train_steps_per_second", 11.83, "global", 3.0)]
    assert records(ds["train_metrics"], "instance", "name", "value") == [
        ("default0", "train_runtime_s", 5.071), ("default0", "train_loss", 2.1)]


def test_hf_dict_after_the_last_carriage_return_update(tmp_path, engine):
    # the same, as a tqdm line of \r updates (which the fast reader must decline)
    text = ("[default0]:\r 50%|#####     | 30/60 [00:02<00:02, 12.50it/s]"
            "\r100%|##########| 60/60 [00:04<00:00, 13.93it/s][default0]:" + HF_DICT + "\n")
    ds = read(tmp_path, text, engine)
    tp = ds["throughput"]
    assert records(tp, "instance", "pattern", "step", "value") == [
        ("default0", "tqdm", 30, 12.5), ("default0", "tqdm", 60, 13.93),
        ("default0", "hf_trainer", None, 201.9), ("default0", "hf_trainer", None, 11.83)]
    assert set(tp["lineno"]) == {1}
    assert ds["train_metrics"]["name"].tolist() == ["train_runtime_s", "train_loss"]


def test_fast_reader_declines_a_dict_after_a_bar():
    raw = (b" 50%|#####     | 30/60 [00:02<00:02, 12.50it/s]\r100%|##########| 60/60 "
           b"[00:04<00:00, 13.93it/s]{'train_runtime': 5.0}")
    read_it, tp, tm = fast_read(raw)
    assert not read_it and tp.empty and tm.empty
    plain = raw[:raw.index(b"{")]
    read_it, tp, _ = fast_read(plain)
    assert read_it and tp["step"].tolist() == [30, 60]


# Lightning RichProgressBar: the first line is issue 14's; the others follow the layout of
# RichProgressBar.configure_columns (validation bar: no metrics; '0.00it/s' before a speed)
RICH = [
    "Epoch 1/4  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 63/63 0:00:01 • 0:00:00 52.68it/s "
    "v_num: 1 train_loss: 0.28",
    "Validation ━━━━━━━━━━━━━━━━━━━━╺━━━━━━━━━━━━━━━━━━━ 16/32 0:00:00 • 0:00:01 81.20it/s ",
    "Epoch 2/4  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0/63 0:00:00 • -:--:-- 0.00it/s "
    "v_num: 1 train_loss: 0.28",
    "Epoch 2/4  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 63/63 0:00:01 • 0:00:00 55.05it/s "
    "v_num: 1 train_loss: 0.21",
]


def test_rich_progress_bar_rows(tmp_path, engine):
    ds = read(tmp_path, "\n".join(RICH) + "\n", engine)
    tp = ds["throughput"]
    assert records(tp, "pattern", "name", "label", "metric", "value", "scope", "step", "epoch",
                   "phase") == [
        ("rich_bar", "rich_bar", "Epoch #", "iterations_per_s", 52.68, "instance", 63, 1.0,
         "train"),
        ("rich_bar", "rich_bar", "Validation", "iterations_per_s", 81.2, "instance", 16, None,
         "eval"),
        ("rich_bar", "rich_bar", "Epoch #", "iterations_per_s", 55.05, "instance", 63, 2.0,
         "train")]
    tm = ds["train_metrics"]
    assert records(tm[tm["name"] == "train_loss"], "pattern", "value", "step", "epoch") == [
        ("rich_bar", 0.28, 63, 1.0), ("rich_bar", 0.21, 63, 2.0)]


# --- 3. step time is not throughput -------------------------------------------------------------

MEG = (" iteration       10/    1000 | consumed samples:           40 | elapsed time per "
       "iteration (ms): 128.4 | learning rate: 0.000E+00 | global batch size:     4 |\n")


def test_megatron_step_time(tmp_path, engine):
    ds = read(tmp_path, MEG, engine)
    tp, tm = ds["throughput"], ds["train_metrics"]
    assert "iterations_per_s" not in set(tp["metric"].astype(str))
    assert records(tp, "name", "metric", "step") == [
        ("elapsed time per iteration", "samples_per_s", 10)]
    assert tp["value"].item() == pytest.approx(4 / 0.1284)
    assert records(tm[tm["name"] == "step_time_s"], "pattern", "value", "step") == [
        ("megatron", pytest.approx(0.1284), 10)]
    assert "iteration_time_s" not in set(tm["name"])


def test_megatron_printed_samples_per_second_only(tmp_path, engine):
    # realdata trainlog/bigscience_bloom176b_chronicles_from_docs.md L45 (shortened)
    text = ("[default7]: iteration    12695/  115311 | consumed samples:      9841584 | elapsed "
            "time per iteration (s): 105.22 | learning rate: 5.999E-05 | global batch size:  "
            "2048 | lm loss: 2.270193E+00 | samples per second: 19.464 |\n")
    ds = read(tmp_path, text, engine)
    assert records(ds["throughput"], "name", "value", "instance") == [
        ("samples per second", 19.464, "default7")]
    tm = ds["train_metrics"]
    assert tm.loc[tm["name"] == "step_time_s", "value"].tolist() == [105.22]


def test_nanogpt_and_modded_nanogpt(tmp_path, engine):
    # nanoGPT train.py (issue 14); modded-nanogpt realdata modded_nanogpt_8xh100_speedrun.txt
    # L1882-1884 and L3735
    text = ("iter 10: loss 3.2000, time 35.20ms, mfu 1.20%\n"
            "step:0/1845 val_loss:10.8288 train_time:0ms step_avg:0.03ms\n"
            "step:1/1845 train_time:73ms step_avg:72.70ms\n"
            "step:2/1845 train_time:94ms step_avg:47.22ms\n"
            "step:1845/1845 val_loss:3.2772 train_time:114005ms step_avg:61.79ms\n")
    ds = read(tmp_path, text, engine)
    assert ds["throughput"].empty
    got = records(ds["train_metrics"], "pattern", "name", "value", "step")
    assert got == [
        ("nanogpt", "loss", 3.2, 10), ("nanogpt", "step_time_s", pytest.approx(0.0352), 10),
        ("nanogpt", "mfu_pct", 1.2, 10),
        ("modded_nanogpt", "val_loss", 10.8288, 0),
        ("modded_nanogpt", "step_time_avg_s", pytest.approx(0.0727), 1),
        ("modded_nanogpt", "train_time_s", pytest.approx(0.073), 1),
        ("modded_nanogpt", "step_time_avg_s", pytest.approx(0.04722), 2),
        ("modded_nanogpt", "train_time_s", pytest.approx(0.094), 2),
        ("modded_nanogpt", "val_loss", 3.2772, 1845)]


def test_modded_nanogpt_real_log(engine):
    path = REAL / "trainlog" / "modded_nanogpt_8xh100_speedrun.txt"
    if not path.exists():
        pytest.skip("shared/realdata not there")
    tm = dptrace.read_trainlog(path, engine=engine)["train_metrics"]
    st = tm[tm["name"] == "step_time_avg_s"]  # step_avg: a running average
    assert len(st) == 1845  # step:1/1845 .. step:1845/1845
    assert st["value"].iloc[-1] == pytest.approx(0.06174)  # L3734 step_avg:61.74ms


def test_key_value_dt_still_step_time(tmp_path, engine):
    # realdata alcfws_ezpz_hf_trainer_from_docs.md L558 (indent dropped)
    text = ("[2025-05-06 09:06:59][I][examples/minimal:61:__main__] iter=1 loss=2527.130371 "
            "dt=0.151625 dtf=0.002179 dtb=0.149447\n")
    tm = read(tmp_path, text, engine)["train_metrics"]
    assert tm.loc[tm["name"] == "step_time_s", "value"].tolist() == [0.151625]


# --- 4. phases -------------------------------------------------------------------------------------

def test_phases():
    assert schema.PHASES == ("train", "eval", "load", "download")
    assert rules.PHASES is schema.PHASES


@pytest.mark.parametrize(("label", "phase"), [
    ("Downloading shards", "download"), ("Downloading (…)of-#.safetensors", "download"),
    ("Fetching # files", "download"), ("Uploading checkpoint", "download"),
    ("Downloading checkpoint shards", "download"),
    ("Loading checkpoint shards", "load"), ("Map (num_proc=#)", "load"),
    ("Running tokenizer on dataset", "load"), ("Graph compilation", "load"),
    ("Preprocessing", "load"),
    ("Validation", "eval"), ("Testing", "eval"), ("Predicting DataLoader #", "eval"),
    ("Epoch #", "train"),
])
def test_label_phases(label, phase):
    assert rules.PHASES[rules.label_phase(label)] == phase


def test_phase_from_name_and_bytes_metric():
    name = pd.Series(["tqdm", "eval_samples_per_second", "tqdm", "tqdm"])
    label = pd.Series([None, None, None, "Training"])
    metric = pd.Series(["bytes_per_s", "samples_per_s", "iterations_per_s", "iterations_per_s"])
    assert rules.phases(name, label, metric).tolist() == ["download", "eval", "train", "train"]
    assert rules.phases(name, label).tolist() == ["train", "eval", "train", "train"]


def test_phase_column_of_a_read(tmp_path, engine):
    text = ("Downloading shards:  50%|#####     | 1/2 [00:10<00:10, 10.00s/it]\n"
            "Loading checkpoint shards:  50%|#####     | 1/2 [00:01<00:01,  1.20s/it]\n"
            "Epoch 0:  50%|#####     | 8/16 [00:01<00:01,  5.00it/s]\n"
            "Validation DataLoader 0:  50%|#####     | 8/16 [00:01<00:01,  9.00it/s]\n")
    tp = read(tmp_path, text, engine)["throughput"]
    assert tp["phase"].astype(str).tolist() == ["download", "load", "train", "eval"]
    assert list(tp["phase"].cat.categories) == list(schema.PHASES)


# --- 5. world size statements -------------------------------------------------------------------

#: a figure after the statements: a file of statements alone is no training log
FIGURE = "e2e samples_per_sec: 1.0\n"


def world_rows(ds: dptrace.Dataset) -> pd.DataFrame:
    tm = ds["train_metrics"]
    return tm[tm["name"] == "world_size"]


@pytest.mark.parametrize(("line", "pattern", "value"), [
    # realdata scaling/oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md L69, L94
    ("[1,0]<stdout>:Number of GPUs: 8", "horovod_benchmark", 8),
    ("Number of GPUs: 16", "horovod_benchmark", 16),
    ("Number of CPUs: 4", "horovod_benchmark", 4),
    ("Running on 64 tasks", "launcher", 64),                                  # issue 14
    ("+ WORLD_SIZE=256", "env", 256),       # realdata bigscience_megatron_n64_tp4_pp64.out L1142
    ("SLURM_NTASKS=16", "env", 16),
    ("OMPI_COMM_WORLD_SIZE=1", "env", 1),   # realdata andrewor14_tf_keras_rank0_stderr.log L100
    ("rank=3 world_size=16 backend=nccl", "env", 16),
    ("world size: 16", "env", 16),
    # realdata megatron_ds_gpt3_125M_8gpu.log L104; bigscience_meg_ds_zero_n16.out L1291
    ("using world size: 8, data-parallel-size: 8, tensor-model-parallel size: 1, "
     "pipeline-model-parallel size: 1 ", "env", 8),
    ("using world size: 64 and model-parallel size: 4 ", "env", 64),
    ("Num processes: 2", "hf_trainer", 2),
    ("  Num processes = 2", "hf_trainer", 2),
    # realdata megatron_ds_gpt3_125M_8gpu.log L32; mlprof_deepspeed_thetagpu_16gpu.log L50
    ("[2022-10-29 00:41:40,886] [INFO] [launch.py:156:main] dist_world_size=8", "deepspeed", 8),
    ("[2023-05-15 14:37:24,243] [INFO] [comm.py:656:mpi_discovery] Discovered MPI settings of "
     "world_rank=5, local_rank=5, world_size=16, master_addr=10.230.2.206, master_port=29500",
     "deepspeed", 16),
])
def test_world_size_statements(tmp_path, engine, line, pattern, value):
    tm = world_rows(read(tmp_path, line + "\n" + FIGURE, engine))
    assert records(tm, "pattern", "name", "value") == [(pattern, "world_size", value)]
    assert pattern in rules.WORLD_SIZE_FROM


@pytest.mark.parametrize("line", [
    "LOCAL_WORLD_SIZE=8",
    "local world size: 8",
    # DeepSpeed's config print is the data-parallel size: 1 in this 64-rank job
    # (realdata bigscience_meg_ds_3d_n16_ds_on.out L721)
    "[2021-06-10 20:47:51,887] [INFO] [config.py:904:print]   world_size ................... 1",
    "  data_parallel_size .............................. 8",
    "tensor_model_parallel_size=4",
    "SLURM_NTASKS_PER_NODE=8",
])
def test_not_world_sizes(tmp_path, engine, line):
    tm = read(tmp_path, line + "\n", engine)["train_metrics"]
    assert "world_size" not in set(tm["name"])


def test_horovod_total_keeps_devices_and_gives_world_size(tmp_path, engine):
    tm = read(tmp_path, "Total img/sec on 32 GPU(s): 2744.9 +-122.3\n", engine)["train_metrics"]
    assert records(tm, "pattern", "name", "value") == [
        ("horovod_benchmark", "total_img_sec_ci", 122.3),  # the printed +-: the check range
        ("horovod_benchmark", "devices", 32), ("horovod_benchmark", "world_size", 32)]


# realdata alcfws_ezpz_hf_trainer_from_docs.md L1185-1190 (indent dropped): 192 / (8 x 1)
HF_BLOCK = """\
[INFO|trainer.py:2414] 2025-05-06 22:26:52,889 >> ***** Running training *****
[INFO|trainer.py:2415] 2025-05-06 22:26:52,889 >>   Num examples = 1,920
[INFO|trainer.py:2416] 2025-05-06 22:26:52,889 >>   Num Epochs = 9,223,372,036,854,775,807
[INFO|trainer.py:2417] 2025-05-06 22:26:52,889 >>   Instantaneous batch size per device = 8
[INFO|trainer.py:2420] 2025-05-06 22:26:52,889 >>   Total train batch size (w. parallel, distributed & accumulation) = 192
[INFO|trainer.py:2421] 2025-05-06 22:26:52,889 >>   Gradient Accumulation steps = 1
[INFO|trainer.py:2422] 2025-05-06 22:26:52,890 >>   Total optimization steps = 10
"""


def test_hf_trainer_world_size_from_batch_sizes(tmp_path, engine):
    tm = world_rows(read(tmp_path, HF_BLOCK + FIGURE, engine))
    assert records(tm, "pattern", "name", "value", "lineno") == [
        ("hf_trainer", "world_size", 24, 6)]


def test_hf_trainer_blocks_kept_per_printer(tmp_path, engine):
    # two ranks' blocks interleaved (srun labels): 1,024 / (8 x 4) = 32 for each
    lines = ["***** Running training *****", "  Instantaneous batch size per device = 8",
             "  Total train batch size (w. parallel, distributed & accumulation) = 1,024",
             "  Gradient Accumulation steps = 4"]
    text = "".join(f"{r}: {line}\n" for line in lines for r in (0, 1))
    tm = world_rows(read(tmp_path, text + FIGURE, engine))
    assert records(tm, "instance", "name", "value") == [
        ("0", "world_size", 32), ("1", "world_size", 32)]


def test_world_size_from_is_described():
    assert set(rules.WORLD_SIZE_FROM) == {"horovod_benchmark", "launcher", "env", "hf_trainer",
                                          "deepspeed", "rank_of", "generic", "torchrun"}
    assert all(isinstance(v, str) and v for v in rules.WORLD_SIZE_FROM.values())


# --- 6. run headers ------------------------------------------------------------------------------

def test_hf_header_and_its_rows():
    rows = scan(HF_BLOCK)
    assert rows.headers == [(None, 1, "hf_trainer")]
    assert [r[4] for r in rows.tm] == ["world_size"]


def test_horovod_benchmark_block_headers():
    # realdata scaling/oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md L67-73
    text = ("[1,0]<stdout>:Model: ResNet50\n[1,0]<stdout>:Batch size: 32\n"
            "[1,0]<stdout>:Number of GPUs: 8\n[1,0]<stdout>:Running warmup...\n   :\n"
            "[1,0]<stdout>:Running benchmark...\n"
            "[1,0]<stdout>:Iter #0: 592.3 img/sec per GPU\n")
    rows = scan(text)
    assert rows.headers == [("0", 3, "horovod_benchmark"), ("0", 6, "benchmark")]
    assert [(r[3], r[4], r[5]) for r in rows.tm] == [("horovod_benchmark", "world_size", 8.0)]
    assert len(rows.tp) == 1  # the Iter line; headers give no throughput


def test_bagua_doc_holds_two_runs():
    path = REAL / "trainlog" / "bagua_net_synthetic_benchmark_from_docs.md"
    if not path.exists():
        pytest.skip("shared/realdata not there")
    rows = scan(path.read_text())
    assert rows.headers == [(None, 11, "benchmark"), (None, 26, "benchmark")]  # NCCL, Bagua
    assert [r[5] for r in rows.tm if r[4] == "world_size"] == [32.0, 32.0]


def test_ezpz_doc_hf_header():
    path = REAL / "trainlog" / "alcfws_ezpz_hf_trainer_from_docs.md"
    if not path.exists():
        pytest.skip("shared/realdata not there")
    rows = scan(path.read_text())
    assert rows.headers == [(None, 1185, "hf_trainer")]
    # the HF block's total batch (L1190); the echoed launch commands ('mpiexec ... --np=24')
    # are not read (an mpiP report's or a script's command line would be too)
    assert [(r[1], r[5]) for r in rows.tm if r[4] == "world_size"] == [(1190, 24.0)]


def test_megatron_header_per_printed_line():
    path = REAL / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log"
    if not path.exists():
        pytest.skip("shared/realdata not there")
    rows = scan(path.read_text())
    assert rows.headers == [(None, 104, "megatron")]
    world = [(r[3], r[1], r[5]) for r in rows.tm if r[4] == "world_size"]
    # the launcher's dist_world_size (L32) and Megatron's arguments (L104); not DeepSpeed's
    # config print 'world_size ... 8' (L1672: the data-parallel size)
    assert world == [("deepspeed", 32, 8.0), ("env", 104, 8.0)]


def test_sixteen_ranks_sixteen_headers():
    text = "".join(f"{r}: ***** Running training *****\n" for r in range(16))
    rows = scan(text)
    assert rows.headers == [(str(r), r + 1, "hf_trainer") for r in range(16)]
    assert rows.tp == [] and rows.tm == []


def test_header_kinds_are_described():
    assert set(rules.HEADERS) == {"hf_trainer", "horovod_benchmark", "benchmark", "megatron"}


# --- 7. keywords ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    RICH[0], "iter 10: loss 3.2000, time 35.20ms, mfu 1.20%",
    "step:1/1845 train_time:73ms step_avg:72.70ms", "***** Running training *****",
    "Running benchmark...", "Running on 64 tasks", "Number of GPUs: 8", "WORLD_SIZE=4",
    "SLURM_NTASKS=4", "world_size=4", "using world size: 8", "Num processes: 2",
    "  Instantaneous batch size per device = 8", "  Gradient Accumulation steps = 4",
    "  Total train batch size (w. parallel, distributed & accumulation) = 64",
    "samples/sec(global)=525.3", "samples/sec 2249.7", "dist_world_size=8",
])
def test_every_new_line_kind_is_found_by_the_scanner(line):
    from dptrace.formats.trainlog import SCAN

    assert SCAN.search(line.encode() + b"\n"), line
    assert general._SCAN_TEXT.search(line), line


def test_rich_keyword_not_on_tqdm_rates():
    from dptrace.formats.trainlog import SCAN

    tqdm = b"Epoch 0:  25%|##5       | 8/32 [00:00<00:00, 49.28it/s, loss=0.87, v_num=15]\n"
    hits = [m.group(0) for m in SCAN.finditer(tqdm)] if hasattr(SCAN, "finditer") else []
    assert all(not h.endswith((b"it/s ", b"it/s\n")) for h in hits)
