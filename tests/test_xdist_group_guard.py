"""tests/xdist_group_guard.py on real pytest-xdist runs of a tiny suite: a test marked
``xdist_group`` passes only where xdist really keeps its group on one worker (its node id gets
the ``@group`` suffix), and fails with the guard's message where it does not; a test with no
group is left alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

HERE = Path(__file__).resolve().parent
SUITE = '''
import pytest

@pytest.mark.xdist_group("pair")
def test_a():
    pass

@pytest.mark.xdist_group(name="pair")
def test_b():
    pass

def test_plain():
    pass
'''


def _run(tmp_path: Path, *args: str) -> str:
    (tmp_path / "test_tiny.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "xdist_group_guard", "-p",
                           "no:cacheprovider", "-v", "-n", "2", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return proc.stdout + proc.stderr


def _outcomes(out: str) -> dict[str, tuple[str, str]]:
    """test name -> (worker, outcome) from ``-v`` lines like ``[gw1] [ 50%] PASSED test_tiny.py::test_a@pair``."""
    return {m[3]: (m[1], m[2]) for m in re.finditer(
        r"^\[(gw\d+)\] \[\s*\d+%\] (PASSED|FAILED|ERROR) test_tiny\.py::(\w+)", out, re.M)}


def test_groups_spread_over_workers_fail(tmp_path: Path) -> None:
    """Without ``--dist loadgroup`` nothing keeps a group together: the grouped tests fail (at setup)."""
    out = _run(tmp_path)
    got = _outcomes(out)
    assert {k: v[1] for k, v in got.items()} == {
        "test_a": "ERROR", "test_b": "ERROR", "test_plain": "PASSED"}, out
    assert "the group is not kept on one worker" in out, out


def test_loadgroup_passes_only_where_it_groups(tmp_path: Path) -> None:
    """With ``--dist loadgroup``: on a pytest/xdist pair that groups (the suffix is there), the
    pair runs on one worker and passes; on one that does not (pytest 9.2 with xdist 3.8), the
    guard fails both instead of letting them pass by luck."""
    out = _run(tmp_path, "--dist", "loadgroup")
    got = _outcomes(out)
    assert set(got) == {"test_a", "test_b", "test_plain"}, out
    assert got["test_plain"][1] == "PASSED", out
    if "test_tiny.py::test_a@pair" in out:
        assert got["test_a"][1] == got["test_b"][1] == "PASSED", out
        assert got["test_a"][0] == got["test_b"][0], out
    else:
        assert got["test_a"][1] == got["test_b"][1] == "ERROR", out
        assert "the group is not kept on one worker" in out, out
