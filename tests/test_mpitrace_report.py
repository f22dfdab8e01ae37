"""The communication and message-size report sections: terminal (pinned width) and JSON."""

import json
from pathlib import Path

from rich.console import Console

import dptrace
from dptrace.cli import main
from dptrace.findings import build as findings_build
from dptrace.reports import model, terminal
from dptrace.reports.fmt import bin_label, human_bytes, human_rate

FIX = Path(__file__).parent / "fixtures" / "mpitrace"


def _render(paths) -> str:
    console = Console(width=120, color_system=None, record=True)
    terminal.render(model.build(dptrace.load(paths)), console)
    return console.export_text()


def test_terminal_communication_and_sizes_for_theta_job():
    out = _render(FIX / "alcfws_theta_knl32")
    assert "job 19013" in out
    assert "32 of 32 ranks listed" in out
    assert "min 251.328 (rank 0), median 273.408 (rank 26), max 278.406 (rank 28)" in out
    assert "COV 1.7%, imbalance max/mean 1.022" in out
    assert "86.4% of the MPI time is in Allreduces of <= 64 B" in out
    assert "MPI_Allreduce  141,324 calls, 800.504 s over 3 rank profiles" in out
    # the 8-byte negotiation bin and the 64 MiB gradient bin, with human sizes
    assert any(line.lstrip("│ ").startswith("4-8 B        137,319    45,773.0  693.873")
               for line in out.splitlines())
    big = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("32-64 MiB"))
    assert "73.687" in big and "342 MB/s" in big and "662 MB/s" in big
    assert max(len(line) for line in out.splitlines()) <= 120


def test_terminal_flags_files_of_different_runs():
    out = _render(FIX / "mlprof_polaris_run4")
    assert "(own file differs)" in out
    # the check itself is a finding now (the Findings section, first in every face)
    found = findings_build(dptrace.load(FIX / "mlprof_polaris_run4"))
    said = found[found["kind"] == "files_disagree"]["message"].item()
    assert "4 ranks (1, 2, 3, 7) have an own profile that differs" in said
    # ties at 0.00 s: the min/median/max ranks mpitrace itself named (rank 0, lines 30-32)
    assert "min 0.000 (rank 6), median 0.000 (rank 5), max 0.000 (rank 4)" in out


def test_cli_json_has_the_same_sections(tmp_path, capsys):
    code = main(["report", str(FIX / "alcfws_theta_knl32"), "--json", "-"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    sec = doc["sections"]
    assert list(sec) == ["findings", "inputs", "communication", "message_sizes"]
    job = sec["communication"]["tables"]["jobs"][0]
    assert (job["job"], job["median_rank"], job["comm_max_s"]) == ("19013", 26, 278.406)
    bins = sec["message_sizes"]["tables"]["bins"]
    big = [b for b in bins if b["routine"] == "MPI_Allreduce" and b["bin"] == 25][0]
    assert (big["calls"], big["bin_lo_bytes"], big["bin_hi_bytes"]) == (375, 33554433, 67108864)
    assert set(sec["communication"]["tables"]) == {"jobs", "ranks", "routines",
                                                   "small_messages"}


def test_no_mpitrace_sections_without_mpitrace_data(tmp_path, capsys):
    log = tmp_path / "slurm-1.out"
    log.write_text("0: e2e samples_per_sec: 563.9653143065\n")
    main(["report", str(log), "--json", "-"])
    sec = json.loads(capsys.readouterr().out)["sections"]
    assert "communication" not in sec and "message_sizes" not in sec


def test_partial_docs_exit_code_and_problems_section(capsys):
    code = main(["report", "--width", "120", str(FIX / "ibm_mpitrace_mpi_examples_README_from_docs.txt")])
    out = capsys.readouterr().out
    assert code == 0        # elided by its author: a warning, not a skipped part
    assert "elided with '...'" in out


def test_human_units():
    assert [bin_label(0, 0), bin_label(1, 4), bin_label(2, 8), bin_label(10, 2048),
            bin_label(21, 2**22), bin_label(9, 1024)] == \
        ["0 B", "1-4 B", "4-8 B", "1-2 KiB", "2-4 MiB", "512 B-1 KiB"]
    assert human_bytes(1536) == "1.5 KiB" and human_rate(341_523_000) == "342 MB/s"
