"""A format shipped outside dptrace (issue 31 §1): the toy package in tests/plugins/, found
through a real ``dptrace.formats`` entry point (a ``.dist-info`` in a scratch directory on
the path of a fresh interpreter), is read, reported, judged by its own rule with its own
threshold, tells the runs table its world size, and is compared; no file under
``dptrace/`` names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PLUGIN = HERE / "plugins"
ROOT = HERE.parent

BASE = "#toyprof\nrank 0 busy_s 9 wait_s 1\nrank 1 busy_s 8 wait_s 2\nrank 2 busy_s 3 wait_s 7\n"
CAND = "#toyprof\nrank 0 busy_s 9 wait_s 3\nrank 1 busy_s 9 wait_s 3\nrank 2 busy_s 9 wait_s 3\n" \
       "rank x busy_s 1 wait_s 1\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A directory holding the toy package's distribution metadata with its entry point."""
    d = tmp_path_factory.mktemp("site")
    info = d / "toy_dptrace-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-dptrace\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dptrace.formats]\ntoy = toy_dptrace\n")
    return d


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN)])}
    return subprocess.run([sys.executable, "-m", "dptrace.cli", *args], env=env, text=True,
                          capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("toy")
    (d / "base.toy").write_text(BASE)
    (d / "cand.toy").write_text(CAND)
    return d / "base.toy", d / "cand.toy"


def test_no_file_under_dptrace_names_the_toy_format():
    for path in (ROOT / "dptrace").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "toy_dptrace" not in text and "toy_ranks" not in text, path


def test_read_reported_judged_and_sized(site, inputs):
    base, cand = inputs
    done = _run(site, "report", str(base), str(cand), "--json", "-")
    assert done.returncode == 1, done.stderr   # a bad line of cand.toy was skipped
    rep = json.loads(done.stdout)
    toy = rep["sections"]["toy"]["tables"]["ranks"]
    assert len(toy) == 6
    found = rep["sections"]["findings"]["tables"]["findings"]
    waiting = [f for f in found if f["kind"] == "toy_waiting"]
    # base rank 2 waited 7 of 10 s; nobody in cand (3 of 12 s)
    assert [(f["subject"], round(f["value"])) for f in waiting] == [("rank 2", 70)]
    runs = {r["label"]: r for r in rep["sections"]["inputs"]["tables"]["runs"]}
    assert runs["base.toy"]["world_size"] == 3 and \
        runs["base.toy"]["world_size_from"] == "toy profile ranks"
    problems = rep["sections"]["problems"]["tables"]["problems"]
    assert any("line 5" in p["message"] and p["source"].endswith("cand.toy") for p in problems)


def test_its_threshold_is_overridable(site, inputs):
    done = _run(site, "report", str(inputs[0]), "--json", "-", "--threshold", "toy_waiting=80")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["sections"]["findings"]["tables"]["findings"]
    assert not [f for f in found if f["kind"] == "toy_waiting"]


def test_compared(site, inputs):
    base, cand = inputs
    done = _run(site, "compare", f"base={base}", f"cand={cand}", "--json", "-")
    assert done.returncode in (0, 1), done.stderr
    table = json.loads(done.stdout)["sections"]["compare"]["tables"]["compare"]
    rank2 = [r for r in table if r["table"] == "toy.ranks" and r["key"] == "rank 2"
             and r["metric"] == "wait_s"]
    assert len(rank2) == 1 and rank2[0]["base"] == 7 and rank2[0]["candidate"] == 3
    assert rank2[0]["change_s"] == -4


def test_formats_lists_it(site):
    done = _run(site, "formats")
    assert done.returncode == 0 and "toy" in done.stdout, done.stderr
