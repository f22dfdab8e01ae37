"""Bounded, seeded fuzzing of every reader (issue 12, item 5; issue 30; issue 31 section 5):
one test per format, the whole file about 2 minutes on a 2-core machine.

Each format's test runs, in this order:

* the coverage-guided fuzzer (scripts/fuzz_atheris.py, atheris) started first in a
  subprocess beside this one: the committed corpus ``tests/fuzz-corpus/<format>/``, then
  ``ATHERIS_RUNS`` more inputs, libFuzzer seeded (``-seed=1``, ``PYTHONHASHSEED=0``), new
  inputs written to a temporary directory; each input must keep the invariants of
  ``fuzz.invariants``;
* meanwhile, in this process, scripts/fuzz.py's cases: the truncations of one real fixture
  at every 1% (each distinct cut once) and ``CASES`` seeded random mutations over all the
  format's fixtures, each checked against the invariants and the prefix oracle (scripts/
  fuzz.py's docstring documents both); two of them (the cut at 50% and random case 0)
  also go through ``dptrace.cli.main(["report", f, "--json", j, "--html", h])``.

A failure lists each distinct problem with what reruns it: ``python scripts/fuzz.py --seed
12 --only N --format F`` for a random case, the fixture and the cut for a truncation, and
for the coverage-guided run the saved input (``fuzz-failures/ci/<format>/``) with
``python scripts/fuzz_atheris.py rerun --format F <file>``. ``DPTRACE_FUZZ_CASES`` and
``DPTRACE_FUZZ_ATHERIS_RUNS`` change the counts.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / file)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


fuzz = _module("dptrace_fuzz", "fuzz.py")
sys.modules.setdefault("fuzz", fuzz)   # fuzz_atheris imports it by this name
fuzz_atheris = _module("dptrace_fuzz_atheris", "fuzz_atheris.py")

SEED = 12
#: random cases per format (plus the truncations at every 1%)
CASES = int(os.environ.get("DPTRACE_FUZZ_CASES", "30"))
#: coverage-guided inputs per format after the committed corpus
ATHERIS_RUNS = int(os.environ.get("DPTRACE_FUZZ_ATHERIS_RUNS", "80"))
ATHERIS_TIMEOUT = 600
#: the fixture truncated at every 1%, per format
PERCENT_SEED = {
    "trainlog": "tests/fixtures/trainlog/alcfws_horovod_tf2_cpu_n8.out",
    "mpitrace": "tests/fixtures/mpitrace/alcfws_theta_knl16_mpi_profile.75877.0",
    "horovod": "tests/fixtures/horovod/alcfws_timeline_cpu_n1.json",
    "sntilestat": "tests/fixtures/sntilestat/watch_sntilestat_sn30.typescript",
    "nccltests": "tests/fixtures/nccltests/polaris_nccltests_allreduce_n8x4gpu.dat",
    "nccl": "tests/fixtures/nccl/bigscience_n1_16gb_all_reduce_bench.txt",
    "torchtrace": "tests/fixtures/torchtrace/one_step/rank0.pt.trace.json",
    "mpip": "tests/fixtures/mpip/default/dp_steps.4.16765.1.mpiP",
    "dscomms": "tests/fixtures/dscomms/deepspeed_comms_logging_tutorial_from_docs.md",
    "mllog": "tests/fixtures/mllog/mlperf1.0_nv_bert_pytorch_n1_8gpu.txt",
}
_PREFIX_MARKS = ("rows before line", "lines before line", "the cut line", "rows past the cut",
                 "untouched-prefix", "truncated row", "is not a prefix",
                 "differs from the clean")


def _group(failure: str) -> str:
    return "prefix oracle" if any(m in failure for m in _PREFIX_MARKS) else "invariant"


def _atheris_start(fmt: str, tmp: Path) -> tuple[subprocess.Popen, int]:
    committed = fuzz_atheris.CORPUS / fmt
    n = len([p for p in committed.iterdir() if p.is_file()]) if committed.is_dir() else 0
    runs = n + ATHERIS_RUNS
    cmd = fuzz_atheris.run_command(fmt, runs=runs, seed=1, grow=tmp / "atheris-grown",
                                   seeds="committed" if n else "all",
                                   out=str(ROOT / "fuzz-failures" / "ci"), timeout=120)
    log = open(tmp / "atheris.log", "w+", encoding="utf-8")  # noqa: SIM115 (read at the end)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                            env={**os.environ, "PYTHONHASHSEED": "0"})
    proc.log = log  # type: ignore[attr-defined]
    return proc, runs


def _atheris_finish(fmt: str, proc: subprocess.Popen, runs: int) -> list[str]:
    try:
        code = proc.wait(timeout=ATHERIS_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    log = proc.log  # type: ignore[attr-defined]
    log.seek(0)
    text = log.read()
    log.close()
    lines = [ln for ln in text.splitlines() if not ln.startswith(("INFO: Instrumenting", '"'))]
    saved = re.findall(r"Test unit written to (\S+/(?:crash|timeout|oom|leak)-\S+)", text)
    if code != 0:
        why = "did not finish" if code is None else f"exited {code}"
        rerun = (f"; rerun: python scripts/fuzz_atheris.py rerun --format {fmt} {saved[0]}"
                 if saved else "")
        return [f"coverage-guided run {why}; input saved: {saved or 'none'}{rerun}\n"
                + "\n".join(lines[-40:])]
    stats = fuzz_atheris.parse_stats(text)
    if stats.get("runs", 0) < runs:
        return [f"coverage-guided run made {stats.get('runs', 0)} of {runs} cases:\n"
                + "\n".join(lines[-20:])]
    return []


@pytest.mark.parametrize("fmt", fuzz.FORMATS)   # slow (tests/conftest.py SLOW) unless a replay
def test_fuzz(fmt: str, tmp_path: Path) -> None:
    proc, runs = _atheris_start(fmt, tmp_path)
    try:
        seed = ROOT / PERCENT_SEED[fmt]
        cases, cuts = [], set()
        for case in fuzz.percent_cases(fmt, seed):
            if case.damage not in cuts:
                cuts.add(case.damage)
                cases.append(case)
        seeds, byte_cache = fuzz.seed_files(fmt), {}
        cases += [fuzz.make_case(fmt, i, SEED, seeds, byte_cache) for i in range(CASES)]
        render = {-51, 0}   # the cut at 50%, random case 0
        cache: dict = {}
        found: dict[str, str] = {}
        work = tmp_path / "cases"
        for case in cases:
            res = fuzz.run_case(case, work, cache, render=case.index in render)
            for f in res.failures:
                how = (f"python scripts/fuzz.py --seed {SEED} --only {case.index} --format "
                       f"{fmt}" if case.index >= 0
                       else f"{case.seed.relative_to(ROOT)} cut at {case.detail}")
                found.setdefault(f"{_group(f)}: {fuzz.signature(f)}",
                                 f"{_group(f)}: {f[:300]}  [{case.seed.name} {case.kind} "
                                 f"{case.detail}; {how}]")
    finally:
        guided = _atheris_finish(fmt, proc, runs)
    failures = sorted(found.values()) + guided
    assert not failures, f"{len(failures)} distinct failures:\n" + "\n".join(failures)


def test_cases_are_deterministic() -> None:
    """The same seed and index give the same bytes (a failure can be rerun by its number)."""
    for fmt in fuzz.FORMATS:
        a = fuzz.make_case(fmt, 7, SEED)
        b = fuzz.make_case(fmt, 7, SEED)
        assert (a.seed, a.kind, a.data) == (b.seed, b.kind, b.data)


def test_bad_mutations_make_every_bad_value_kind() -> None:
    """The coverage-guided fuzzer's own mutations put in each of issue 30's bad values."""
    import random

    data = (ROOT / PERCENT_SEED["trainlog"]).read_bytes()[:4000]
    made = [fuzz_atheris.bad_mutation(data, random.Random(i)) for i in range(400)]
    assert sum(m != data for m in made) > 350
    joined = b"\n".join(made)
    for want in (b"9" * 5000, b"1" + b"0" * 30, b"9223372036854775808", b"1e999",
                 "\u00b2".encode(), b"[" * 1000 + b"]" * 1000, b"[1,3]<stdout>:",
                 b"[default0]:", "\u202e".encode(), b"\x1b[2J"):
        assert want in joined, want[:40]
    step = [m for m in made if re.search(rb"ProfilerStep#\d{30}", m)]
    assert step


def test_dictionaries_are_libfuzzer_dictionaries() -> None:
    """Every format has a dictionary; every entry is a quoted string of at most 64 bytes
    (libFuzzer's limit) and the shared one holds the launcher prefixes and bad numbers."""
    for name in ("common", *fuzz.FORMATS):
        text = (fuzz_atheris.CORPUS / f"{name}.dict").read_text(encoding="utf-8")
        entries = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
        assert len(entries) >= 20, name
        for ln in entries:
            assert ln.startswith('"') and ln.endswith('"'), (name, ln)
            raw = re.sub(r"\\x[0-9A-Fa-f]{2}|\\.", "x", ln[1:-1])
            assert len(raw) <= 64, (name, ln)
    common = (fuzz_atheris.CORPUS / "common.dict").read_text(encoding="utf-8")
    for want in ('"[1,3]<stdout>:"', '"3: "', '"[default0]:"', '"1e999"', '"nan"', '"-5.0"',
                 '"9223372036854775808"', '"\\xE2\\x80\\xAE"', '"\\x1B[2J"'):
        assert want in common, want


def test_fuzz_found_corpus_is_reproducible() -> None:
    """tests/corpus/fuzz_found.py builds exactly the committed files/fuzz/ files, and each
    has its row in expected.tsv."""
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))
    import fuzz_found

    rows = (ROOT / "tests" / "corpus" / "expected.tsv").read_text(encoding="utf-8")
    for k in fuzz_found.classes():
        assert (ROOT / "tests" / "corpus" / "files" / k["file"]).read_bytes() == k["data"]
        assert f"\n{k['cls']}\t{k['file']}\t" in rows, k["cls"]
