#!/usr/bin/env python3
"""Bad-input classes found by the coverage-guided fuzzer (issue 30: every crash found becomes
a corpus file with its expected outcome). Each is rebuilt here from a real fixture (the
bases of make_corpus.py) with the damage that the fuzzer's input held, cut down to the one
thing that broke; the files go to ``files/fuzz/`` and their rows to ``expected.tsv`` (this
script replaces the rows whose class starts with ``fuzz_`` and leaves the others alone).

Run from the repository root after make_corpus.py (which rewrites files/ and expected.tsv
from its own classes): ``python tests/corpus/fuzz_found.py``. The expected outcome is issue
12's rule, as in make_corpus.py; ``rows`` counts come from the clean base read by dptrace.
"""

from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_corpus as mc  # noqa: E402

OUT = HERE / "files" / "fuzz"


def classes() -> list[dict]:
    c: list[dict] = []

    def add(name, file, data, *, base, fmt="auto", status, rows, problem="", exit, check="",
            known="", desc):
        c.append(dict(cls=name, file=f"fuzz/{file}", data=data, base=base, format=fmt,
                      status=status, rows=rows, problem=problem, exit=exit, check=check,
                      known=known, desc=desc))

    # trainlog: a run of digits on a line with '/s' that is not a rate. The generic rate
    # pattern tried every split of the run at every start (cubic): 1,000 digits took 27 s,
    # the fuzzer's 5,000 (a 'MAX_STEPS=' line of a launch script) hours
    base = mc.SAMBAFLOW
    add("fuzz_trainlog_digits_on_a_rate_line", "digits-rate.log",
        base + b"step 3: " + b"9" * 5000 + b" samples/s, loss 2.5\n"
        + b"MAX_STEPS=" + b"1" * 5000 + b" see x/s\n", base=base, status="partial",
        rows="=base+1", problem="not a finite number", exit="1", check="na:throughput.value",
        desc="a SambaFlow log with a 5,000-digit samples/s figure (too big: missing, with a "
        "problem) and a 5,000-digit number on a line with '/s' that is no rate (read in "
        "linear time; it hung the reader)")
    # trainlog: a tqdm bar whose count has 400 digits (a step beyond a float: pandas'
    # to_numeric raised OverflowError and the file failed)
    bar = b"247/3247 [01:03<00:00, 50.76it/s]\n"
    add("fuzz_trainlog_tqdm_step_beyond_float", "tqdm-step400.log",
        mc.sub(mc.TQDM, bar, bar + b"9" * 400 + b"/3247 [01:04<00:00, 50.80it/s]\n"),
        base=mc.TQDM, status="partial", rows="=base+1", problem="does not fit a 64-bit integer",
        exit="1", check="na:throughput.step",
        desc="a tqdm bar whose count has 400 digits: the row is kept, its step missing, with "
        "a problem (the step, past a float's range, failed the file)")
    # sntilestat: a 5,000-digit PID (past Python's int() limit: the file failed) and a
    # zero-padded one of 5,000 characters that fits
    listing = mc.sub(mc.LISTING, b"0.0 2750333  vsastry", b"0.0 " + b"9" * 5000 + b"  vsastry")
    listing = mc.sub(listing, b"0.0      0.0 2750339  vsastry",
                     b"0.0      0.0 " + b"0" * 4993 + b"2750339  vsastry")
    add("fuzz_sntilestat_5000_digit_pid", "sntilestat-pid5000.txt", listing, base=mc.LISTING,
        status="partial", rows="=base", problem="PID .* does not fit", exit="1",
        check="na:tiles.pid",
        desc="an sntilestat listing with a 5,000-digit PID (missing, with a problem) and a "
        "PID zero-padded to 5,000 characters (its value); the file failed on int()")
    # mpitrace: a count of 2^63 - 1 (fits int64, but the columns are float64 until conformed,
    # and float64 rounds it to 2^63: the cast to Int64 raised out of dptrace.load)
    add("fuzz_mpitrace_calls_int64_max", "mpitrace/mpi_profile.75877.0",
        mc.sub(mc.KNL16, b"\n                              91          25.0          0.002\n",
               b"\n             9223372036854775807          25.0          0.002\n"),
        base=mc.KNL16, status="partial", rows="=base", problem="does not fit", exit="1",
        check="na:mpi_messages.calls",
        desc="an mpitrace profile whose MPI_Bcast size bin counts 9223372036854775807 calls "
        "(int64's maximum, which float64 rounds past it): the count is missing, with a "
        "problem; the load raised TypeError")
    # horovod: a rank-ready tick named '²' ('²'.isdigit() is True, int('²') failed the file)
    tick = b'"ph": "X", "name": "0"'
    add("fuzz_horovod_tick_superscript", "timeline-tick-sup2.json",
        mc.sub(mc.HVD_CPU, tick, tick.replace(b'"0"', '"\u00b2"'.encode())),
        base=mc.HVD_CPU, status="ok|partial", rows="=base-1", problem="tick|rank",
        exit="0|1",
        desc="a Horovod timeline whose first rank-ready tick is named '²' (not a rank): that "
        "tick is dropped with a warning naming its line; it failed the file on int('²') "
        "until the reader took ASCII digits only")
    return c


def main() -> None:
    import dptrace

    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    rows = []
    tmp = HERE / ".base-fuzz"
    for k in classes():
        want = k["rows"]
        if "base" in want:
            tmp.mkdir(exist_ok=True)
            p = tmp / Path(k["file"]).name   # the file's own name: mpitrace reads its rank
            p.write_bytes(k["base"])
            n = int(dptrace.load(str(p)).sources["rows"].iloc[0])
            shutil.rmtree(tmp)
            for tag, v in (("base+1", n + 1), ("base-1", n - 1), ("base", n)):
                want = want.replace(tag, str(v))
        assert len(k["data"]) < mc.MAX_BYTES, (k["cls"], len(k["data"]))
        (HERE / "files" / k["file"]).parent.mkdir(parents=True, exist_ok=True)
        (HERE / "files" / k["file"]).write_bytes(k["data"])
        rows.append([k["cls"], k["file"], k["format"], k["status"], want, k["problem"],
                     k["exit"], k["check"], k["known"], k["desc"]])
    path = HERE / "expected.tsv"
    with open(path, encoding="utf-8", newline="") as fh:
        kept = [r for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
                if not r[0].startswith("fuzz_")]
    for r in rows:
        assert all("\t" not in x and "\n" not in x for x in r), r
    text = "".join("\t".join(r) + "\n" for r in kept + rows)
    path.write_text(text, encoding="utf-8")
    print(f"{len(rows)} fuzz-found classes in {OUT}")


if __name__ == "__main__":
    main()
