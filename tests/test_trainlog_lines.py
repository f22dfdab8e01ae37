"""Each recogniser on real line shapes, with launcher prefixes, \\r updates and ANSI codes."""

from pathlib import Path

import pandas as pd
import pytest

import dptrace


def parse(tmp_path: Path, text: str | bytes, name: str = "slurm-1.out") -> dptrace.Dataset:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return dptrace.read_trainlog(p)


def test_srun_label_gives_instance(tmp_path):
    ds = parse(tmp_path, "".join(
        f"{r}: inner train loop time : 36.3 for 10 epochs, number of global steps: 10, "
        f"e2e samples_per_sec: {500 + r}.5\n" for r in (3, 1, 0, 2)))
    tp = ds["throughput"]
    assert list(tp["instance"]) == ["3", "1", "0", "2"]
    assert list(tp["value"]) == [503.5, 501.5, 500.5, 502.5]
    assert set(tp["scope"]) == {"instance"}
    assert list(tp["lineno"]) == [1, 2, 3, 4]


def test_srun_padded_label(tmp_path):
    ds = parse(tmp_path, " 3: e2e samples_per_sec: 1.5\n63: e2e samples_per_sec: 2.5\n")
    assert list(ds["throughput"]["instance"]) == ["3", "63"]


def test_unprefixed_lines_numbered_in_order(tmp_path):
    ds = parse(tmp_path, "noise\ne2e samples_per_sec: 1.0\nmore noise\ne2e samples_per_sec: 2.0\n")
    tp = ds["throughput"]
    assert list(tp["instance"]) == ["0", "1"]
    assert list(tp["lineno"]) == [2, 4]


def test_mpirun_tag_output_after_carriage_return(tmp_path):
    text = ("[1,0]<stderr>:Training:  10%|#         | 10/100 [00:01<00:09,  9.50it/s]"
            "\r[1,0]<stderr>:Training:  20%|##        | 20/100 [00:02<00:08,  9.80it/s]\n"
            "[1,1]<stdout>:Training:  20%|##        | 20/100 [00:02<00:08,  9.70it/s]\n")
    tp = parse(tmp_path, text)["throughput"]
    assert list(tp["instance"]) == ["0", "0", "1"]
    assert list(tp["step"]) == [10, 20, 20]
    assert list(tp["value"]) == [9.5, 9.8, 9.7]
    assert list(tp["label"]) == ["Training"] * 3
    assert list(tp["lineno"]) == [1, 1, 2]


def test_srun_prefix_applies_to_every_carriage_return_update(tmp_path):
    text = "7:  50%|#####     | 5/10 [00:05<00:05,  1.01it/s]\r 60%|######    | 6/10 [00:06<00:04,  2.00s/it]\n"
    tp = parse(tmp_path, text)["throughput"]
    assert list(tp["instance"]) == ["7", "7"]
    assert tp["value"].tolist() == pytest.approx([1.01, 0.5])
    assert set(tp["metric"]) == {"iterations_per_s"}


def test_torchrun_tee_prefix_and_ansi(tmp_path):
    text = "[default3]:\x1b[32m iteration      100/ 1000 | elapsed time per iteration (ms): 500.0 | global batch size:   64 |\x1b[0m\n"
    ds = parse(tmp_path, text)
    tp, tm = ds["throughput"], ds["train_metrics"]
    assert set(tp["instance"]) == {"default3"} and set(tm["instance"]) == {"default3"}
    by_metric = dict(zip(tp["metric"], tp["value"], strict=False))
    assert by_metric == {"samples_per_s": 128.0}  # the step time is no throughput
    assert tm.loc[tm["name"] == "step_time_s", "value"].tolist() == [0.5]
    assert set(tp["step"]) == {100}


def test_tqdm_question_mark_rate_and_repeats(tmp_path):
    text = ("  0%|          | 0/2 [00:00<?, ?it/s]\r 50%|#####     | 1/2 [00:01<00:01,  1.00it/s]"
            "\r100%|##########| 2/2 [00:02<00:00,  1.00it/s]\r100%|##########| 2/2 [00:02<00:00,  1.00it/s]\n")
    tp = parse(tmp_path, text)["throughput"]
    # '?it/s' has no rate; tqdm's close() redraw of 2/2 is kept, flagged as a repeat
    assert list(tp["step"]) == [1, 2, 2]
    assert list(tp["repeat"]) == [False, False, True]


def test_tqdm_custom_unit_scale_and_postfix(tmp_path):
    text = ("Epoch 3: 100%|##########| 10/10 [00:01<00:00,  8.50it/s, loss=0.123, v_num=0]\n"
            "Map: 100%|##########| 5000/5000 [00:00<00:00, 12.3kexamples/s]\n")
    ds = parse(tmp_path, text)
    tp = ds["throughput"]
    assert tp["metric"].tolist() == ["iterations_per_s", "samples_per_s"]
    assert tp["value"].tolist() == pytest.approx([8.5, 12300.0])
    assert tp["epoch"].iloc[0] == 3.0
    assert tp["label"].tolist() == ["Epoch #", "Map"]
    tm = ds["train_metrics"]
    # read once, by the tqdm recogniser (not again as a key=value line)
    assert tm[["pattern", "name", "value"]].values.tolist() == [["tqdm", "loss", 0.123],
                                                                ["tqdm", "v_num", 0.0]]


def test_hf_dicts_quoted_numbers_and_scope(tmp_path):
    text = ("{'loss': '6.811', 'grad_norm': '1.5', 'learning_rate': '4.9e-05', 'epoch': '0.5'}\n"
            "{'train_runtime': 12.4474, 'train_samples_per_second': 154.249, "
            "'train_steps_per_second': 0.803, 'train_loss': 6.5, 'epoch': 1.0}\n"
            "{'eval_loss': 6.2, 'eval_samples_per_second': 0.227, 'epoch': 1.0}\n")
    ds = parse(tmp_path, text)
    tp = ds["throughput"]
    assert tp["name"].tolist() == ["train_samples_per_second", "train_steps_per_second"]
    assert tp["metric"].tolist() == ["samples_per_s", "steps_per_s"]
    assert set(tp["scope"]) == {"global"}
    tm = ds["train_metrics"]
    got = dict(zip(tm["name"], tm["value"], strict=False))
    assert got["loss"] == 6.811 and got["learning_rate"] == 4.9e-05
    assert got["train_runtime_s"] == 12.4474 and got["eval_samples_per_second"] == 0.227
    assert tm.loc[tm["name"] == "loss", "epoch"].item() == 0.5


def test_hf_dict_printed_by_every_rank_is_not_summed(tmp_path):
    line = "{'train_runtime': 836.4, 'train_samples_per_second': 1.196, 'epoch': 1.0}\n"
    ds = parse(tmp_path, line * 4)
    tp = ds["throughput"]
    assert tp["repeat"].tolist() == [False, True, True, True]  # copies of one figure
    s = dptrace.throughput_summary(tp)
    assert s["job_value"].item() == pytest.approx(1.196)
    from dptrace.formats.trainlog import job
    j = job.job_figures(tp, ds.runs)
    assert j["value"].item() == pytest.approx(1.196) and j["how"].item() == "printed_global"


def test_deepspeed_timer_old_and_new(tmp_path):
    text = ("[2023-04-14 08:27:19,411] [INFO] [timer.py:199:stop] epoch=0/micro_step=10/"
            "global_step=10, RunningAvgSamplesPerSec=173.4455644119137, "
            "CurrSamplesPerSec=171.97903593624417, MemAllocated=3.96GB, MaxMemAllocated=11.65GB\n"
            "[2022-07-29 00:42:31,004] [INFO] [timer.py:198:stop] 0/20, "
            "RunningAvgSamplesPerSec=357.38655790272156, CurrSamplesPerSec=358.42529475384885, "
            "MemAllocated=1.64GB\n")
    tp = parse(tmp_path, text)["throughput"]
    assert tp["name"].tolist() == ["RunningAvgSamplesPerSec", "CurrSamplesPerSec"] * 2
    assert tp["step"].tolist() == [10, 10, 20, 20]
    assert tp["value"].iloc[1] == 171.97903593624417
    assert set(tp["scope"]) == {"global"}


def test_horovod_benchmark_lines(tmp_path):
    text = ("Iter #0: 123.4 img/sec per GPU\nIter #1: 130.0 img/sec per GPU\n"
            "Img/sec per GPU: 126.7 +-5.6\nTotal img/sec on 8 GPU(s): 1013.6 +-44.8\n"
            "Iter #0: 2620.2 img/sec GPU\n")
    tp = parse(tmp_path, text)["throughput"]
    assert tp["scope"].tolist() == ["device", "device", "device", "global", "global"]
    assert tp["step"].tolist()[:2] == [0, 1]
    assert tp["value"].tolist() == [123.4, 130.0, 126.7, 1013.6, 2620.2]
    assert set(tp["metric"]) == {"images_per_s"}


def test_megatron_fields_come_and_go(tmp_path):
    text = (" iteration       10/    1000 | consumed samples:           40 | elapsed time per "
            "iteration (ms): 19932.4 | learning rate: 0.000E+00 | global batch size:     4 | "
            "loss scale: 4096.0 | number of skipped iterations:  10 | number of nan iterations:"
            "   0 |\n"
            " iteration        1/    1000 | elapsed time per iteration (ms): 123742.4 | "
            "learning rate: 1.875E-05 | lm loss: 1.252221E+01 | loss scale: 4096.0 |\n")
    ds = parse(tmp_path, text)
    tp = ds["throughput"]
    assert tp["metric"].tolist() == ["samples_per_s"]  # gbs / step time; no gbs at step 1
    assert tp["value"].tolist() == pytest.approx([4 / 19.9324])
    tm = ds["train_metrics"]
    assert tm.loc[tm["name"] == "step_time_s", "value"].tolist() == pytest.approx(
        [19.9324, 123.7424])
    assert tm.loc[tm["name"] == "lm_loss", "value"].item() == 12.52221
    assert tm.loc[tm["name"] == "skipped_iterations", "value"].item() == 10


def test_keras_time_history(tmp_path):
    text = ("I0121 22:42:50.808443 139905346141568 keras_utils.py:170] TimeHistory: 0.06 seconds,"
            " 36.16 examples/second between steps 1 and 2\n")
    tp = parse(tmp_path, text, "stderr")["throughput"]
    assert tp[["value", "step", "metric"]].values.tolist() == [[36.16, 2, "samples_per_s"]]


def test_generic_rate_only_when_nothing_specific(tmp_path):
    text = "[1,0]<stdout>:[INFO] throughput: 7599.7 samples/sec\nImg/sec per GPU: 85.8 +-3.8\n"
    tp = parse(tmp_path, text)["throughput"]
    assert tp["pattern"].tolist() == ["generic", "horovod_benchmark"]
    assert tp["instance"].tolist()[0] == "0"


def test_loss_lines(tmp_path):
    text = ("Epoch: 0 \tLoss: 55.910 \tTime/epoch: 5.76\n"
            "[2] Train Epoch: 1 [640/6250 (10%)]\tLoss: 0.035994\n")
    tm = parse(tmp_path, text)["train_metrics"]
    assert tm[["name", "value"]].values.tolist() == [["loss", 55.91], ["epoch_time_s", 5.76],
                                                      ["loss", 0.035994]]
    assert tm["instance"].tolist()[-1] == "2"


def test_windows_line_endings(tmp_path):
    tp = parse(tmp_path, "a\r\ne2e samples_per_sec: 1.5\r\ne2e samples_per_sec: 2.5\r\n")["throughput"]
    assert tp["value"].tolist() == [1.5, 2.5]
    assert tp["lineno"].tolist() == [2, 3]


def test_schema_dtypes(tmp_path):
    tp = parse(tmp_path, "e2e samples_per_sec: 1.5\n")["throughput"]
    assert tp.columns.tolist()[:13] == ["run", "source", "instance", "rank", "pattern", "name",
                                        "label", "metric",
                                        "value", "scope", "step", "epoch", "lineno"]
    assert tp["step"].dtype == pd.Int64Dtype() and tp["value"].dtype == "float64"
    assert isinstance(tp["metric"].dtype, pd.CategoricalDtype)


def test_parallel_scan_matches_single_process(tmp_path, monkeypatch):
    from pandas.testing import assert_frame_equal

    from dptrace.formats.trainlog import read as trainlog

    lines = []
    for i in range(3000):
        lines.append(f"{i % 7}: noise line {i} with nothing\n")
        if i % 3 == 0:
            lines.append(f"{i % 7}: Training: {i % 100:3d}%|#   | {i}/3000 [00:01<00:09, "
                         f"{1 + i % 13}.5it/s]\r 1%|#   | {i + 1}/3000 [00:01<00:09,  2.5it/s]\n")
        if i % 10 == 0:
            lines.append(f"e2e samples_per_sec: {i}.25\n")
    p = tmp_path / "slurm-9.out"
    p.write_text("".join(lines) + "tail without newline e2e samples_per_sec: 1.0")
    single = dptrace.read_trainlog(p)
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    parallel = dptrace.read_trainlog(p, executor=2)
    for table in ("throughput", "train_metrics"):
        assert_frame_equal(single[table], parallel[table])
    assert_frame_equal(single.problems, parallel.problems)
    # the last line (4301) ends in a number cut by the end of the file: dropped and flagged
    assert single["throughput"]["lineno"].max() == 4298
    cut = single.problems[single.problems["line"] == 4301]
    assert cut["severity"].tolist() == ["error"] and "cut short ('1.0')" in cut["message"].item()


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_close_redraw_across_a_range_cut_is_flagged_once(tmp_path, monkeypatch, workers):
    from pandas.testing import assert_frame_equal

    from dptrace.formats.trainlog import read as trainlog

    # every rank's bar prints each update and then, on close(), the identical update again,
    # on the next line; some pairs straddle the cuts between the scan ranges
    lines = []
    for i in range(400):
        rank = i % 4
        upd = (f"{rank}: Epoch 1:  {i % 100:2d}%|#   | {i}/400 [00:01<00:09, "
               f"{1 + i % 11}.25it/s, loss=0.{i % 9}5]\n")
        lines += [upd, upd, f"{rank}: noise {i}\n"]
    p = tmp_path / "slurm-7.out"
    p.write_text("".join(lines))
    single = dptrace.read_trainlog(p)
    assert len(single["throughput"]) == 800 and len(single["train_metrics"]) == 800
    assert (~single["throughput"]["repeat"]).sum() == 400
    assert (~single["train_metrics"]["repeat"]).sum() == 400
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    parallel = dptrace.read_trainlog(p, executor=workers)
    for table in ("throughput", "train_metrics"):
        assert_frame_equal(single[table], parallel[table])


def test_keyword_finder_agrees_with_the_pattern_search(monkeypatch):
    from dptrace.formats.trainlog import general as trainlog

    buf = (b"noise\n 3: 12/40 [00:01<00:03, 7.1it/s]\nloss: 0.5\r e2e samples_per_sec: 5.0\n"
           b"site-packages/setuptools 9 tokens/s\n")
    fast = trainlog._keyword_finder()

    def expected(pos: int, end: int) -> int:
        m = trainlog._SCAN.search(buf, pos, end)
        return m.start() if m else -1

    spots = [(p, e) for p in range(0, len(buf), 3) for e in (len(buf), min(p + 12, len(buf)))]
    assert [fast(buf, p, e) for p, e in spots] == [expected(p, e) for p, e in spots]
    assert fast(buf, 0, len(buf)) == buf.index(b"/s]") and fast(buf, 0, 20) == -1
    monkeypatch.setattr(trainlog, "_re_engine", object())   # no RE2 internals: plain search
    plain = trainlog._keyword_finder()
    assert [plain(buf, p, e) for p, e in spots] == [expected(p, e) for p, e in spots]


def test_newline_count_in_place_equals_bytes_count(tmp_path):
    import mmap
    import random

    from dptrace.formats.trainlog import general as trainlog

    rng = random.Random(4)
    data = bytes(rng.choice(b"ab\n\r ") for _ in range(3 * trainlog._COUNT_CHUNK + 123))
    p = tmp_path / "x.log"
    p.write_bytes(data)
    with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        spans = [(0, len(data)), (5, 5), (7, 4000), (1, trainlog._NP_COUNT_MIN + 1),
                 (trainlog._COUNT_CHUNK - 3, 2 * trainlog._COUNT_CHUNK + 17)]
        spans += [tuple(sorted(rng.randrange(len(data)) for _ in range(2))) for _ in range(20)]
        for a, b in spans:
            want = data[a:b].count(b"\n")
            assert trainlog._count_newlines(mm, a, b) == want
            assert trainlog._count_newlines(data, a, b) == want


@pytest.mark.parametrize("workers,range_bytes", [(2, 1 << 30), (3, 4 << 10), (5, 9 << 10)])
def test_ranges_finished_in_their_workers_join_as_one_scan(tmp_path, monkeypatch, workers,
                                                           range_bytes):
    """Each range's tables are finished in its worker and joined in the parent: passes of a
    bar's count that cross a cut (global steps), closing redraws and copies of a global
    figure in another range, ranks that print in some ranges only, lines without a prefix:
    the rows are those of one scan of the whole file, and the join is what ran."""
    from pandas.testing import assert_frame_equal

    from dptrace.formats.trainlog import read as trainlog

    lines = []
    for epoch in range(6):
        for i in range(1, 61):
            for rank in range(3 if epoch % 2 else 4):
                bar = (f"Epoch {epoch}: {i * 100 // 60:3d}%|#   | {i}/60 [00:01<00:09, "
                       f"{1 + (i + rank) % 11}.{epoch}5it/s, loss=0.{i % 9}5, v_num=0]")
                pre = "" if rank == 3 else f"{rank}: "
                lines.append(f"{pre}{bar}\r{bar}\n" if i % 17 == 0 else f"{pre}{bar}\n")
                if i == 60:
                    lines.append(f"{pre}{bar}\n")  # the close redraw, on its own line
            if i % 20 == 0:
                lines.append(f"{i % 4}: noise {epoch} {i} step {i}\n")
        for rank in range(2):
            lines.append(f"{rank}: {{'train_runtime': 12.4, 'train_samples_per_second': "
                         f"{150 + epoch % 2}.5, 'epoch': 1.0}}\n")
        lines.append(f"{epoch % 4}: e2e samples_per_sec: {100 + epoch}.25\n")
    p = tmp_path / "slurm-11.out"
    p.write_text("".join(lines))
    single = dptrace.read_trainlog(p)
    tp = single["throughput"]
    assert tp["repeat"].any() and tp["step"].max() > 60  # global steps and repeats to join
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(trainlog, "RANGE_BYTES", range_bytes)
    joins = []
    real = trainlog._joined
    monkeypatch.setattr(trainlog, "_joined", lambda *a, **k: joins.append(1) or real(*a, **k))
    parallel = dptrace.read_trainlog(p, executor=workers)
    assert joins == [1]  # the ranges finished in their workers, joined
    for table in ("throughput", "train_metrics"):
        assert_frame_equal(single[table], parallel[table])
    assert_frame_equal(single.problems, parallel.problems)
    assert_frame_equal(single.sources, parallel.sources)
    assert_frame_equal(single.runs, parallel.runs)
