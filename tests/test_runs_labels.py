"""Run labels keep every input and say what happened to it (issue 30): a user's label is
never merged with a made-up one, a file two runs name is read once and the other run is
told, and a comparison that lacks a run says why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import dptrace
from dptrace import runs
from dptrace.cli import main

LOG = Path(__file__).parent / "fixtures" / "trainlog" / "dschat_step1_opt1.3b_gbs128.log"
MEG = Path(__file__).parent / "fixtures" / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log"


def _dirs(tmp_path: Path) -> Path:
    for name, src in (("a", LOG), ("d1", MEG), ("d2", LOG), ("base", LOG), ("cand", MEG)):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / "train.log")
    return tmp_path


def test_a_users_label_is_never_taken_by_another_run(tmp_path, monkeypatch):
    monkeypatch.chdir(_dirs(tmp_path))
    ds = dptrace.load(runs.command_line(["a#2=d1", "a=d2", "a"]))
    assert ds.run_ids == ["a#2", "a", "a#3"]
    assert ds.runs["sources"].tolist() == [1, 1, 1]


def test_a_file_two_runs_name_is_read_once_and_said(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_dirs(tmp_path))
    code = main(["compare", "x=base", "y=base/train.log,cand", "--json", "-"])
    out = capsys.readouterr().out
    assert code in (0, 1, 4)
    assert "given for run 'y' too, but read once, for run 'x'" in out


def test_comparing_a_run_with_itself_says_its_files_are_the_others(tmp_path, monkeypatch,
                                                                    capsys):
    monkeypatch.chdir(_dirs(tmp_path))
    assert main(["compare", "base", "base"]) == 2
    err = capsys.readouterr().err
    assert "base#2: its files are the files of run base" in " ".join(err.split())


@pytest.mark.parametrize("missing", ["/nonexistent/x", "nope.log"])
def test_comparing_with_a_path_that_does_not_exist_says_so(tmp_path, monkeypatch, capsys,
                                                          missing):
    monkeypatch.chdir(_dirs(tmp_path))
    assert main(["compare", "base", missing]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"no such file or directory: {missing}" in err
