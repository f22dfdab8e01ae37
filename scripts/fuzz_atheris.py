#!/usr/bin/env python3
"""Coverage-guided fuzzing of dptrace's readers with atheris (issue 30).

scripts/fuzz.py damages the real fixtures at random and compares with the clean file (its
prefix oracle); this script lets libFuzzer's coverage feedback, through atheris, steer the
damage into the readers' branches instead. One target per reader: the input's bytes are
written to a file of a name the reader knows (``train.log``, ``mpi_profile.1234.0``,
``rank0.pt.trace.json``, ...) and read by ``dptrace.read_<format>`` (the format forced, so
every input reaches that reader, whatever it looks like) on the serial executor. Only the
``dptrace`` modules are instrumented. Each input must satisfy scripts/fuzz.py's invariants
(:func:`fuzz.invariants`): ``read`` raises nothing; one ``sources`` row, naming the input;
every problem names it, with a line >= 1 and within the input; a known status; no parser
crash caught by the loader; ``sources.rows`` equal to the rows in the tables, and a status
that agrees with the rows and the error problems. A broken invariant is an exception, and
libFuzzer saves the input (``crash-<sha1>``). There is no prefix oracle here: a mutant has
no clean original (scripts/fuzz.py keeps that check).

Inputs: the seeds are every real fixture of the format (``tests/fixtures/<format>``, cut to
``--max-len`` bytes at a line end) and every uncompressed file of the bad-input corpus
(``tests/corpus/files``); the corpus that grows is ``tests/fuzz-corpus/<format>/``. The
mutations are libFuzzer's (with the dictionary ``tests/fuzz-corpus/common.dict`` +
``<format>.dict``: the format's tokens and issue 30's bad values that fit in 64 bytes) and,
for one mutation in five, this script's own (:func:`bad_mutation`): a number replaced by a
5,000-digit integer, an integer above 2**63, 10**30, ``inf``/``nan``/``1e999``/``-5.0``; a
digit replaced by a non-ASCII one (``²``, ``٣``, ``１``); ``ProfilerStep#`` with 30 digits;
JSON ``args`` nested 1,000 deep; a line torn by a second writer's line; launcher prefixes
(``[1,3]<stdout>:``, ``3: ``, ``[default0]:``) on the lines; ESC sequences and U+202E.

Commands::

    # a resumable campaign: every format (or --format F,G), M minutes each; new inputs are
    # added to tests/fuzz-corpus/<format>/, broken invariants saved under fuzz-failures/
    python scripts/fuzz_atheris.py campaign --minutes 5
    # line and branch coverage of each reader's parse modules (coverage.py): seeds alone,
    # then seeds + the fuzz corpus
    python scripts/fuzz_atheris.py coverage
    # shrink tests/fuzz-corpus/<format>/ to what is committed: inputs cut to 4 KB, then the
    # fewest that keep the corpus's branch coverage (greedy, smallest first)
    python scripts/fuzz_atheris.py minimize
    # one bounded, seeded run (what tests/test_fuzz.py does): new inputs go to --grow
    python scripts/fuzz_atheris.py run --format nccl --runs 200 --seed 1 --grow /tmp/g \\
        --seeds committed
    # an input that failed: runs it through the target, prints what broke
    python scripts/fuzz_atheris.py rerun --format nccl fuzz-failures/nccl/crash-...

``campaign`` prints, per reader, the cases run, cases per second and libFuzzer's ``cov``
(edges of the instrumented dptrace modules reached) and ``ft`` (features); ``coverage``
prints coverage.py's per-reader percentages. A campaign keeps going after a broken
invariant (``run --keep-going``: each distinct failure saved once, with a README.txt and
the command to rerun it); a hang (an input over ``--timeout`` s) ends that run, which the
campaign restarts for the time left.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import os
import pkgutil
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import fuzz  # noqa: E402

FORMATS = fuzz.FORMATS
FIXTURES = ROOT / "tests" / "fixtures"
BAD_CORPUS = ROOT / "tests" / "corpus" / "files"
CORPUS = ROOT / "tests" / "fuzz-corpus"
#: the file name each target writes its input to (what the reader is given)
NAMES = {
    "trainlog": "train.log", "mpitrace": "mpi_profile.1234.0", "horovod": "timeline.json",
    "sntilestat": "sntilestat.txt", "nccltests": "all_reduce_perf.log", "nccl": "nccl.log",
    "torchtrace": "rank0.pt.trace.json", "mpip": "app.4.1234.1.mpiP", "dscomms": "comms.log",
    "mllog": "mllog.txt",
}
#: libFuzzer's -max_len: inputs (and seeds) are at most this long
MAX_LEN = 16_384
#: committed corpus inputs are cut to this many bytes (at a line end)
COMMIT_MAX = 4_096
#: a format package's modules that are the report side, not the parse path
REPORT_SIDE = ("sections", "terminal", "figures", "tables")


# --- inputs ---------------------------------------------------------------------------------

def cut(data: bytes, limit: int) -> bytes:
    """``data`` cut to at most ``limit`` bytes, at the last line end when there is one."""
    if len(data) <= limit:
        return data
    head = data[:limit]
    nl = head.rfind(b"\n")
    return head[:nl + 1] if nl > limit // 4 else head


def seed_inputs(fmt: str, limit: int = MAX_LEN) -> list[bytes]:
    """The seeds of ``fmt``'s target, distinct: its real fixtures (any size, cut to
    ``limit``) and the bad-input corpus's uncompressed files, in a fixed order."""
    paths = fuzz.seed_files(fmt, max_bytes=1 << 40)
    paths += sorted(p for p in BAD_CORPUS.rglob("*") if p.is_file()
                    and p.suffix not in (".gz", ".bz2", ".xz"))
    out, seen = [], set()
    for p in paths:
        data = cut(p.read_bytes(), limit)
        if data not in seen:
            seen.add(data)
            out.append(data)
    return out


def corpus_inputs(fmt: str) -> list[bytes]:
    """The inputs of ``tests/fuzz-corpus/<fmt>/``, by name."""
    d = CORPUS / fmt
    return [p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()] if d.is_dir() else []


def write_dir(inputs: list[bytes], d: Path) -> Path:
    """``inputs`` written to ``d``, each named by its SHA-1 (as libFuzzer names them)."""
    d.mkdir(parents=True, exist_ok=True)
    for data in inputs:
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return d


def dictionary(fmt: str, path: Path) -> Path:
    """common.dict and ``<fmt>.dict`` joined into ``path`` (libFuzzer takes one -dict)."""
    text = "".join((CORPUS / f).read_text(encoding="utf-8") for f in ("common.dict",
                                                                       f"{fmt}.dict"))
    path.write_text(text, encoding="utf-8")
    return path


# --- issue 30's bad values: the mutations libFuzzer's dictionary cannot make ----------------

_NUMBER = re.compile(rb"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LINE_START = re.compile(rb"(?m)^")
HUGE_NUMBERS = (b"9" * 5000, b"1" + b"0" * 30, b"9223372036854775808", b"18446744073709551617",
                b"1e999", b"inf", b"nan", b"-5.0", b"NaN", b"-inf")
ODD_DIGITS = ("\u00b2", "\u0663", "\uff11", "\u0969")
PREFIXES = (b"[1,3]<stdout>:", b"3: ", b"[default0]:", b"[rank3]:", b"[0]<stderr>:")
HOSTILE = (b"\x1b[2J", b"\x1b]0;pwned\x07", "\u202e".encode(), b"\x1b[31m", "\u200b".encode())


def bad_mutation(data: bytes, rng: random.Random) -> bytes:
    """One of issue 30's bad values put into ``data`` (see the module doc)."""
    kind = rng.randrange(8)
    pos = rng.randrange(len(data) + 1)
    nums = list(_NUMBER.finditer(data)) if kind in (0, 1) else []
    if kind == 0:   # a number that does not fit, or is not finite
        rep = rng.choice(HUGE_NUMBERS)
        if nums:
            m = rng.choice(nums)
            return data[:m.start()] + rep + data[m.end():]
        return data[:pos] + rep + data[pos:]
    if kind == 1:   # a non-ASCII digit where a digit was expected
        odd = rng.choice(ODD_DIGITS).encode()
        if nums:
            m = rng.choice(nums)
            at = rng.randrange(m.start(), m.end())
            return data[:at] + odd + data[at + 1:]
        return data[:pos] + odd + data[pos:]
    if kind == 2:   # ProfilerStep# with 30 digits
        step = b"ProfilerStep#" + b"".join(str(rng.randrange(10)).encode() for _ in range(30))
        old = re.search(rb"ProfilerStep#\d*", data)
        if old and rng.random() < 0.8:
            return data[:old.start()] + step + data[old.end():]
        return data[:pos] + step + data[pos:]
    if kind == 3:   # nested 1,000 deep (JSON args, or brackets in a text line)
        if rng.random() < 0.5:
            deep = b'{"a": ' * 1000 + b"1" + b"}" * 1000
        else:
            deep = b"[" * 1000 + b"]" * 1000
        args = re.search(rb'"args":\s*', data[pos:])
        if args:
            at = pos + args.end()
            return data[:at] + deep + b", " + data[at:]
        return data[:pos] + deep + data[pos:]
    if kind == 4:   # a torn line: a second writer's line lands inside this one
        starts = [m.start() for m in _LINE_START.finditer(data)]
        if len(starts) < 3:
            return data[:pos] + b"\n" + data[pos:]
        i, j = sorted(rng.sample(range(len(starts) - 1), 2))
        other = data[starts[j]:starts[j + 1]]
        at = rng.randrange(starts[i], starts[i + 1])
        return data[:at] + other + data[at:]
    if kind == 5:   # launcher prefixes on the lines (all, or every other one)
        prefix = rng.choice(PREFIXES)
        lines = data.splitlines(keepends=True)
        every = rng.choice((1, 2))
        return b"".join(prefix + ln if k % every == 0 else ln for k, ln in enumerate(lines))
    if kind == 6:   # escapes, bidi
        return data[:pos] + rng.choice(HOSTILE) + data[pos:]
    # a whole line repeated at a random place (a second writer printing the same record)
    lines = data.splitlines(keepends=True)
    if not lines:
        return data + b"\n"
    k = rng.randrange(len(lines))
    return data[:pos] + lines[k] + data[pos:]


# --- the target -----------------------------------------------------------------------------

class InvariantBroken(AssertionError):
    """A fuzz input broke one of the invariants (the message lists which)."""


def reader_modules(fmt: str) -> list[str]:
    """The modules of ``fmt``'s parse path: its package and every submodule but the
    report side (sections, terminal, figures, tables)."""
    pkg = importlib.import_module(f"dptrace.formats.{fmt}")
    names = [pkg.__name__]
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name not in REPORT_SIDE and not info.name.startswith("_"):
            names.append(f"{pkg.__name__}.{info.name}")
    return names


class Target:
    """``fmt``'s target: bytes -> the invariants' failures (an exception from the reader
    propagates)."""

    def __init__(self, fmt: str, workdir: Path) -> None:
        import dptrace

        self.fmt = fmt
        self.read = getattr(dptrace, f"read_{fmt}")
        workdir.mkdir(parents=True, exist_ok=True)
        self.path = workdir / NAMES[fmt]

    def failures(self, data: bytes) -> list[str]:
        self.path.write_bytes(data)
        ds = self.read(str(self.path), executor="serial")
        return fuzz.invariants(ds, str(self.path), data)

    def check(self, data: bytes) -> None:
        """Raise :class:`InvariantBroken` when ``data`` breaks an invariant."""
        bad = self.failures(data)
        if bad:
            raise InvariantBroken("; ".join(bad))


def save_failure(out: Path, fmt: str, data: bytes, what: str) -> Path:
    """``data`` saved as ``out/<fmt>/<sha1>/<the target's file name>`` with a README.txt."""
    d = out / fmt / hashlib.sha1(data).hexdigest()[:16]
    d.mkdir(parents=True, exist_ok=True)
    f = d / NAMES[fmt]
    f.write_bytes(data)
    (d / "README.txt").write_text(
        f"format: {fmt}\nfailure:\n{what}\n"
        f"rerun: python scripts/fuzz_atheris.py rerun --format {fmt} '{f}'\n"
        f"report: dptrace report --format {fmt} '{f}'\n", encoding="utf-8")
    return f


def _signature(text: str) -> str:
    return fuzz.signature(text.strip().splitlines()[-1] if text.strip() else text)


def cmd_run(args: argparse.Namespace, extra: list[str]) -> int:
    """One libFuzzer run in this process (never returns: libFuzzer exits)."""
    import atheris

    fmt = args.format
    with atheris.instrument_imports(include=["dptrace"]):
        import dptrace
        import dptrace.api
        import dptrace.loader
        import dptrace.runs
        import dptrace.schema
        import dptrace.sources  # noqa: F401

        for name in reader_modules(fmt):
            importlib.import_module(name)
        work = Path(tempfile.mkdtemp(prefix=f"dptrace-atheris-{fmt}-"))
        target = Target(fmt, work)
        target.failures(b"")   # the lazy imports of the read path, instrumented too
    out = Path(args.out)
    seen: set[str] = set()

    def one(data: bytes) -> None:
        if not args.keep_going:
            target.check(data)
            return
        try:
            bad = target.failures(data)
            what = "; ".join(bad)
        except Exception as exc:
            bad, what = [str(exc)], "".join(traceback.format_exception(exc))
        if bad:
            sig = _signature(what)
            if sig not in seen:
                seen.add(sig)
                where = save_failure(out, fmt, data, what)
                print(f"FAILURE {fmt}: {what.strip().splitlines()[-1][:300]} -> {where}",
                      file=sys.stderr, flush=True)

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.2:
            return bad_mutation(data, rng)[:max_size]
        return atheris.Mutate(data, max_size)

    tmp = Path(tempfile.mkdtemp(prefix=f"dptrace-atheris-seeds-{fmt}-"))
    dirs = [Path(args.grow or CORPUS / fmt)]
    dirs[0].mkdir(parents=True, exist_ok=True)
    if args.seeds in ("all", "committed") and (CORPUS / fmt).is_dir() \
            and (CORPUS / fmt).resolve() != dirs[0].resolve():
        dirs.append(CORPUS / fmt)
    if args.seeds == "all":
        dirs.append(write_dir(seed_inputs(fmt, args.max_len), tmp / "seeds"))
    out.mkdir(parents=True, exist_ok=True)
    (out / fmt).mkdir(exist_ok=True)
    argv = [sys.argv[0], f"-dict={dictionary(fmt, tmp / 'fmt.dict')}",
            f"-max_len={args.max_len}", f"-timeout={args.timeout:g}", "-rss_limit_mb=4096",
            f"-seed={args.seed}", "-print_final_stats=1",
            f"-artifact_prefix={out / fmt}{os.sep}"]
    if args.runs:
        argv.append(f"-runs={args.runs}")
    if args.seconds:
        argv.append(f"-max_total_time={args.seconds:g}")
    argv += extra + [str(d) for d in dirs]
    atheris.Setup(argv, one, custom_mutator=mutate)
    atheris.Fuzz()
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    """Each file through the target, as the fuzzer ran it; 1 if any fails."""
    target = Target(args.format, Path(tempfile.mkdtemp(prefix="dptrace-rerun-")))
    bad = 0
    for f in args.files:
        try:
            failures = target.failures(Path(f).read_bytes())
        except Exception:
            failures = [traceback.format_exc()]
        bad += bool(failures)
        print(f"{f}: " + ("ok" if not failures else "\n  ".join(["FAILED", *failures])))
    return 1 if bad else 0


# --- the campaign: a run per format, restarted until its time is spent -----------------------

_STATUS = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")


def parse_stats(text: str) -> dict[str, int]:
    """libFuzzer's last status line and final stats: runs, cov, ft, corp, exec/s."""
    out: dict[str, int] = {}
    for st in _STATUS.finditer(text):
        out.update(runs=int(st.group(1)), cov=int(st.group(2)), ft=int(st.group(3)),
                   corp=int(st.group(4)), exec_s=int(st.group(5)))
    for key, rx in (("runs", r"stat::number_of_executed_units: (\d+)"),
                    ("exec_s", r"stat::average_exec_per_sec:\s+(\d+)")):
        m = re.search(rx, text)
        if m:
            out[key] = int(m.group(1))
    return out


def run_command(fmt: str, *, seconds: float = 0, runs: int = 0, seed: int = 1,
                grow: Path | None = None, seeds: str = "all", out: str = "fuzz-failures",
                keep_going: bool = False, timeout: float = 30) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "run", "--format", fmt,
           "--seed", str(seed), "--seeds", seeds, "--out", out, "--timeout", f"{timeout:g}"]
    if seconds:
        cmd += ["--seconds", f"{seconds:g}"]
    if runs:
        cmd += ["--runs", str(runs)]
    if grow:
        cmd += ["--grow", str(grow)]
    if keep_going:
        cmd.append("--keep-going")
    return cmd


def cmd_campaign(args: argparse.Namespace) -> int:
    fmts = _formats(args.format)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    summary = []
    for fmt in fmts:
        t0 = time.time()
        budget = args.minutes * 60
        total: dict[str, int] = {}
        failures: list[str] = []
        runs = restarts = 0
        log = Path(args.out) / f"{fmt}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        while time.time() - t0 < budget - 5 and restarts < 5:
            left = budget - (time.time() - t0)
            cmd = run_command(fmt, seconds=left, seed=args.seed + restarts, out=args.out,
                              keep_going=True, timeout=args.timeout,
                              grow=Path(args.corpus) / fmt if args.corpus else None)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT,
                                  timeout=left + 300)
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(proc.stderr)
            stats = parse_stats(proc.stderr)
            runs += stats.get("runs", 0)
            total.update(stats)
            failures += [ln for ln in proc.stderr.splitlines() if ln.startswith("FAILURE")]
            for art in re.findall(r"Test unit written to (\S+/(?:crash|timeout|oom|leak)-\S+)",
                                  proc.stderr):
                failures.append(f"FAILURE {fmt}: libFuzzer stopped (exit {proc.returncode}): "
                                f"{art}")
            if proc.returncode == 0:
                break
            restarts += 1
        el = time.time() - t0
        grown = Path(args.corpus) / fmt if args.corpus else CORPUS / fmt
        n = len(list(grown.iterdir())) if grown.is_dir() else 0
        summary.append((fmt, runs, runs / max(el, 1e-9), total.get("cov", 0),
                        total.get("ft", 0), n, len(failures)))
        print(f"{fmt}: {runs} cases in {el:.0f} s ({runs / max(el, 1e-9):.1f}/s), "
              f"cov {total.get('cov', 0)}, ft {total.get('ft', 0)}, corpus {n} inputs, "
              f"{len(failures)} failures (log: {log})", flush=True)
        for f in failures:
            print("  " + f[:400], flush=True)
    print(f"\n{'reader':11s} {'cases':>7s} {'cases/s':>8s} {'cov':>6s} {'ft':>6s} "
          f"{'corpus':>7s} {'failures':>8s}")
    for fmt, runs, rate, cov, ft, n, nf in summary:
        print(f"{fmt:11s} {runs:7d} {rate:8.1f} {cov:6d} {ft:6d} {n:7d} {nf:8d}")
    return 1 if any(s[-1] for s in summary) else 0


# --- coverage.py: per reader, and the minimized corpus ---------------------------------------

def parse_files(fmt: str) -> list[str]:
    """The files of ``fmt``'s parse modules (the package but its report side), found
    without importing them."""
    d = ROOT / "dptrace" / "formats" / fmt
    return sorted(str(p.resolve()) for p in d.glob("*.py") if p.stem not in REPORT_SIDE)


def cmd_measure(args: argparse.Namespace) -> int:
    """(In a fresh interpreter, coverage started before dptrace is imported, so what runs
    at import counts too.) Reads every file of the given directories through the target
    and prints the line and branch coverage of the reader's parse modules as JSON."""
    import json

    import coverage

    files = parse_files(args.format)
    cov = coverage.Coverage(data_file=None, branch=True, include=files)
    cov.start()
    try:
        target = Target(args.format, Path(tempfile.mkdtemp(prefix="dptrace-cov-")))
        for d in args.dirs:
            for path in sorted(Path(d).iterdir()):
                # a crash is the fuzzer's to report, not coverage's
                with contextlib.suppress(Exception):
                    target.failures(path.read_bytes())
    finally:
        cov.stop()
    lines = hit = branches = taken = 0
    for f in files:
        nums = cov._analyze(f).numbers  # noqa: SLF001 (per-file counts: no public API)
        lines += nums.n_statements
        hit += nums.n_statements - nums.n_missing
        branches += nums.n_branches
        taken += nums.n_branches - nums.n_missing_branches
    print(json.dumps({"line": 100.0 * hit / max(lines, 1),
                      "branch": 100.0 * taken / max(branches, 1)}))
    return 0


def measure(fmt: str, dirs: list[Path]) -> tuple[float, float]:
    """Line and branch coverage (percent) of ``fmt``'s parse modules after reading every
    input of ``dirs``, in a fresh interpreter."""
    import json

    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "measure",
                          "--format", fmt, *map(str, dirs)], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "0"})
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["line"], got["branch"]


def _arcs(cov, files: list[str]) -> set[tuple]:
    data = cov.get_data()
    out: set[tuple] = set()
    for f in files:
        for arc in data.arcs(f) or ():
            out.add((f, arc))
    return out


def cmd_coverage(args: argparse.Namespace) -> int:
    print(f"{'reader':11s} {'seeds':>6s} {'line%':>6s} {'branch%':>8s} | {'+fuzz':>6s} "
          f"{'line%':>6s} {'branch%':>8s}")
    for fmt in _formats(args.format):
        tmp = Path(tempfile.mkdtemp(prefix=f"dptrace-cov-{fmt}-"))
        try:
            seeds = write_dir(seed_inputs(fmt), tmp / "seeds")
            n_seeds = len(list(seeds.iterdir()))
            grown = [CORPUS / fmt] if (CORPUS / fmt).is_dir() else []
            n_grown = len(list(grown[0].iterdir())) if grown else 0
            l0, b0 = measure(fmt, [seeds])
            l1, b1 = measure(fmt, [seeds, *grown])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{fmt:11s} {n_seeds:6d} {l0:6.1f} {b0:8.1f} | {n_grown:6d} {l1:6.1f} "
              f"{b1:8.1f}", flush=True)
    return 0


def cmd_minimize(args: argparse.Namespace) -> int:
    """Greedy set cover on coverage.py's arcs, smallest input first: the committed corpus
    is the fewest inputs, each cut to COMMIT_MAX bytes at a line end, that reach every arc
    that the (cut) seeds and the grown corpus reach together. It is what the short run in
    CI starts from (reading every seed would take longer than the run)."""
    import coverage

    for fmt in _formats(args.format):
        cands = sorted({cut(d, COMMIT_MAX) for d in seed_inputs(fmt) + corpus_inputs(fmt)},
                       key=lambda d: (len(d), d))
        target = Target(fmt, Path(tempfile.mkdtemp(prefix="dptrace-min-")))
        files = parse_files(fmt)
        covered: set[tuple] = set()
        kept = []
        cov = coverage.Coverage(data_file=None, branch=True, include=files)
        for data in cands:
            cov.erase()
            cov.start()
            try:
                target.failures(data)
            except Exception:
                pass
            finally:
                cov.stop()
            arcs = _arcs(cov, files)
            if arcs - covered:
                covered |= arcs
                kept.append(data)
        d = CORPUS / fmt
        if d.exists():
            shutil.rmtree(d)
        write_dir(kept, d)
        print(f"{fmt}: {len(kept)} of {len(cands)} inputs kept "
              f"({sum(map(len, kept)):,} bytes) in {d}", flush=True)
    return 0


def _formats(spec: str) -> list[str]:
    fmts = list(FORMATS) if spec == "all" else spec.split(",")
    for f in fmts:
        if f not in FORMATS:
            raise SystemExit(f"unknown format {f!r}; one of {', '.join(FORMATS)} or all")
    return fmts


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:   # libFuzzer flags after --
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one libFuzzer run of one reader, in this process")
    r.add_argument("--format", required=True, choices=FORMATS)
    r.add_argument("--runs", type=int, default=0, help="cases (0: no limit)")
    r.add_argument("--seconds", type=float, default=0, help="time limit (0: none)")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--grow", help="where new inputs go (default tests/fuzz-corpus/<format>)")
    r.add_argument("--seeds", choices=("all", "committed", "none"), default="all",
                   help="all: the committed corpus, fixtures and bad-input corpus; "
                   "committed: tests/fuzz-corpus/<format>/ only (fast start)")
    r.add_argument("--max-len", type=int, default=MAX_LEN)
    r.add_argument("--timeout", type=float, default=30, help="seconds per input (a hang)")
    r.add_argument("--out", default="fuzz-failures", help="where failing inputs are saved")
    r.add_argument("--keep-going", action="store_true",
                   help="save each distinct failure and go on (a campaign)")
    c = sub.add_parser("campaign", help="a resumable campaign over the formats")
    c.add_argument("--format", default="all")
    c.add_argument("--minutes", type=float, default=5, help="per format")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--timeout", type=float, default=30)
    c.add_argument("--out", default="fuzz-failures")
    c.add_argument("--corpus", help="grow <corpus>/<format>/ instead of tests/fuzz-corpus/ "
                   "(which is then read as seeds)")
    v = sub.add_parser("coverage", help="coverage.py of each reader: seeds, then + corpus")
    v.add_argument("--format", default="all")
    w = sub.add_parser("measure", help="(coverage's worker) one reader over directories")
    w.add_argument("--format", required=True, choices=FORMATS)
    w.add_argument("dirs", nargs="+")
    m = sub.add_parser("minimize", help="shrink tests/fuzz-corpus/<format>/ for a commit")
    m.add_argument("--format", default="all")
    e = sub.add_parser("rerun", help="run saved inputs through the target")
    e.add_argument("--format", required=True, choices=FORMATS)
    e.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return cmd_run(args, extra)
    return {"campaign": cmd_campaign, "coverage": cmd_coverage, "minimize": cmd_minimize,
            "measure": cmd_measure, "rerun": cmd_rerun}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
