#!/usr/bin/env python3
"""Bad-input classes of compressed inputs (issue 30: "gz event bomb"; issue 12's rule: a
bad file costs that file, nothing costs the report, nothing is lost unsaid). Each is a
real fixture (the bases of make_corpus.py) compressed, and damaged in one way or not at
all; the files go to ``files_compressed/`` and their rows, in the columns of
``expected.tsv`` plus ``env`` (environment variables set for the class, ``NAME=VALUE``
separated by spaces: the gz event bomb's low ``DPTRACE_MAX_DECOMPRESSED``, so the test is
fast), to ``compressed.tsv``. ``tests/test_compressed_corpus.py`` runs each row through
test_corpus.py's test (``dptrace.load`` under an alarm, ``dptrace report --json --html``
in a subprocess).

Run from the repository root: ``python tests/corpus/compressed_classes.py``. ``rows``
counts come from the clean content read by dptrace, plain (for a truncated stream: the
plain text it decompresses to, so the rows before the cut are all kept).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_corpus as mc  # noqa: E402

OUT = HERE / "files_compressed"
TABLE = HERE / "compressed.tsv"
COLUMNS = ["class", "file", "format", "status", "rows", "problem", "exit", "check",
           "known_failing", "env", "description"]
#: a DeepSpeed-Chat training log, real (316 KB: 1,472 rows), whole
DSCHAT_FULL = mc.fx("trainlog/dschat_step1_opt1.3b_gbs128.log")
#: copies of the torch trace's real event in the small bomb: 7 MB of trace, 32 KB of .gz
BOMB_COPIES = 20_000


def bomb() -> bytes:
    """The gz event bomb of issue 30, small: the real PyTorch trace (torch 2.13, gloo) with
    its events replaced by copies of one of them, its gloo:all_reduce annotation as the
    profiler wrote it."""
    trace = mc.TORCH
    m = re.search(rb'"traceEvents"\s*:\s*\[\s*', trace)
    assert m
    at = trace.index(b'"name": "gloo:all_reduce"')
    event = trace[trace.rindex(b"\n  {", 0, at) + 3:trace.index(b"\n  }", at) + 4]
    close = trace.rindex(b"]", 0, trace.rindex(b'"traceName"'))
    return (trace[:m.end()] + (event + b",\n") * (BOMB_COPIES - 1) + event + b"\n"
            + trace[close:])


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, 9, mtime=0)


def _inflated_prefix(packed: bytes) -> bytes:
    """What a cut gzip stream decompresses to."""
    return zlib.decompressobj(wbits=31).decompress(packed)


def classes() -> list[dict]:
    c: list[dict] = []

    def add(name, file, data, *, base, fmt="auto", status, rows, problem="", exit,
            check="", known="", env="", desc):
        c.append(dict(cls=name, file=f"../files_compressed/{file}", data=data, base=base,
                      base_name=file.rsplit(".", 1)[0], format=fmt, status=status, rows=rows,
                      problem=problem, exit=exit, check=check, known=known, env=env,
                      desc=desc))

    trace = bomb()
    add("compressed_gz_event_bomb", "bomb.pt.trace.json.gz", _gz(trace), base=None,
        status="partial", rows=">=1",
        problem=r"limit of 1 MiB: the input was cut at 1,048,576 bytes decompressed "
                r"\(after reading [\d,]+ of its [\d,]+ compressed bytes\).*"
                r"--max-decompressed", exit="1",
        env="DPTRACE_MAX_DECOMPRESSED=1M",
        desc=f"the gz event bomb of issue 30, small: a real torch trace whose events are "
             f"{BOMB_COPIES:,} copies of one of its real events ({len(trace) / 1e6:.0f} MB "
             "inflated, about 500x), read with a limit of 1 MiB: cut there, the events "
             "before it kept, an error naming the bytes, the limit and how to raise it")
    packed = _gz(DSCHAT_FULL)
    cut = packed[: len(packed) * 6 // 10]
    add("compressed_gz_truncated", "dschat-cut.log.gz", cut, base=_inflated_prefix(cut),
        status="partial", rows="=base",
        problem=r"gz stream is truncated or corrupt: the file ends inside the compressed "
                r"stream \(cut short\); parsed the [\d,]+ bytes", exit="1",
        desc="a real DeepSpeed-Chat log gzipped and cut at 60% of its compressed bytes (a "
             "copy interrupted): every row of the text before the cut is kept, an error "
             "says the stream was cut and how much was read")
    add("compressed_gz_not_gzip", "dschat-bz2.log.gz", bz2.compress(DSCHAT_FULL[:20_000]),
        base=None, status="failed|unknown", rows="=0",
        problem=r"gz stream is truncated or corrupt: damaged data", exit="3",
        desc="a bzip2 file named .gz (a mislabelled archive: binary, not gzip): the file "
             "fails with an error saying its gz stream is damaged, nothing is read from it")
    add("compressed_bz2_real_log", "dschat.log.bz2", bz2.compress(DSCHAT_FULL),
        base=DSCHAT_FULL, status="ok", rows="=base", exit="0",
        desc="a real DeepSpeed-Chat log compressed with bzip2, undamaged: every row of the "
             "plain log")
    add("compressed_xz_real_log", "dschat.log.xz", lzma.compress(DSCHAT_FULL),
        base=DSCHAT_FULL, status="ok", rows="=base", exit="0",
        desc="a real DeepSpeed-Chat log compressed with xz, undamaged: every row of the "
             "plain log")
    return c


def main() -> None:
    import dptrace

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    rows = []
    for k in classes():
        want = k["rows"]
        if "base" in want:
            with tempfile.TemporaryDirectory() as tmp:
                p = Path(tmp) / k["base_name"]
                p.write_bytes(k["base"])
                n = int(dptrace.load(str(p)).sources["rows"].iloc[0])
            want = want.replace("base", str(n))
        assert len(k["data"]) < mc.MAX_BYTES, (k["cls"], len(k["data"]))
        (HERE / "files" / k["file"]).write_bytes(k["data"])
        rows.append([k["cls"], k["file"], k["format"], k["status"], want, k["problem"],
                     k["exit"], k["check"], k["known"], k["env"], k["desc"]])
    for r in rows:
        assert all("\t" not in x and "\n" not in x for x in r), r
    TABLE.write_text("\t".join(COLUMNS) + "\n" + "".join("\t".join(r) + "\n" for r in rows),
                     encoding="utf-8")
    print(f"{len(rows)} classes in {TABLE.name}, files in {OUT.name}/")


if __name__ == "__main__":
    main()
