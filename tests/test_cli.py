"""The CLI: report, --json, --format, exit codes, schema and formats."""

import json
from pathlib import Path

import pytest

from dptrace.cli import main

SAMBA = "".join(
    f"inner train loop time : 30.0 for 10 epochs, number of global steps: 10, "
    f"e2e samples_per_sec: {v}\n" for v in (500.0, 600.0, 700.0))


@pytest.fixture
def log(tmp_path: Path) -> Path:
    p = tmp_path / "slurm-42.out"
    p.write_text(SAMBA)
    return p


def test_report_terminal(log, capsys):
    assert main(["report", str(log), "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert "e2e samples_per_sec" in out
    # SambaNova's docs average the instances' lines: the job figure is the mean
    assert "600.00" in out and "mean over 3 SambaNova instances" in out
    assert "(their sum: 1,800)" in out and "SambaNova convention" in out


def test_report_json_to_stdout(log, capsys):
    assert main(["report", str(log), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_code"] == 0
    summary = doc["sections"]["throughput"]["tables"]["summary"]
    assert summary[0]["job_value"] == 600.0 and summary[0]["sum"] == 1800.0
    job = doc["sections"]["throughput"]["tables"]["job"]
    assert [(r["metric"], r["value"], r["how"]) for r in job] == [
        ("samples_per_s", 600.0, "mean_of_instances")]
    assert summary[0]["slowest_instance"] == "0"
    assert [r["value"] for r in doc["sections"]["throughput"]["tables"]["instances"]] == [
        500.0, 600.0, 700.0]
    assert doc["sections"]["inputs"]["tables"]["sources"][0]["format"] == "trainlog"


def test_report_json_to_file_and_terminal(log, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["report", str(log), "--json", str(out)]) == 0
    assert "e2e samples_per_sec" in capsys.readouterr().out
    assert json.loads(out.read_text())["sections"]["throughput"]


def test_unknown_format_is_usage_error(log, capsys):
    assert main(["report", str(log), "--format", "nope"]) == 2
    assert "unknown format 'nope'" in capsys.readouterr().err


def test_forced_format(tmp_path, capsys):
    odd = tmp_path / "weird.bin"
    # a head of raw high bytes (a NUL or two alone no longer makes a log binary: issue 12)
    odd.write_bytes(bytes(range(128, 256)) * 8 + b"\n" + SAMBA.encode())
    assert main(["report", str(odd)]) == 3  # binary-looking: skipped, nothing parsed
    capsys.readouterr()
    assert main(["report", str(odd), "--format", "trainlog", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sections"]["throughput"]["tables"]["summary"][0]["job_value"] == 600.0


def test_nothing_parsed_is_failure(tmp_path):
    assert main(["report", str(tmp_path / "missing.out")]) == 3


def test_schema_and_formats(capsys):
    assert main(["schema"]) == 0
    out = capsys.readouterr().out
    assert "### `throughput`" in out and "`samples_per_s`" not in out
    assert "| `value` | float64 |" in out
    assert main(["formats"]) == 0
    assert "trainlog" in capsys.readouterr().out


def test_console_script_entry_point():
    from importlib.metadata import entry_points

    eps = [e for e in entry_points(group="console_scripts") if e.name == "dptrace"]
    assert eps and eps[0].value == "dptrace.cli:main"


def test_report_on_the_sambanova_seed_shows_the_done_when_numbers(capsys):
    seed = Path(__file__).parent / "fixtures" / "trainlog" / "sambanova_dataparallel_seed003.txt"
    assert main(["report", str(seed), "--width", "120"]) == 0
    out = capsys.readouterr().out
    # the 8 'e2e samples_per_sec' lines (seed lines 82-89): sum 5278.34, mean 659.79,
    # slowest the first, 563.97
    assert "mean over 8 SambaNova instances" in out and "5,278" in out and "659.79" in out
    assert "instance 0  563.97, 12.3% below median" in out
