"""What a file's name says: the rank of a per-rank log and the directory of its job's files.

Pure string work on paths (no file is opened): the readers, the run grouping and the
analysis all ask it, so it sits below them all.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: the suffixes of compressed inputs (decoded by :mod:`dptrace.sources`)
COMPRESSED = (".gz", ".bz2", ".xz")

#: per-rank file layouts: torchrun ``--log-dir`` (``<dir>/attempt_0/3/stdout.log``), mpirun
#: ``--output-filename`` (``<dir>/1/rank.3/stdout``), and names such as ``rank3.log``,
#: ``log_rank_3.txt`` (``<dir>/rank3.log``): the rank, and the directory of the job's files
_TORCHRUN_DIR = re.compile(r"(?:^|/)attempt_\d+/(\d{1,6})/(?:stdout|stderr)\.log$")
_MPIRUN_DIR = re.compile(r"(?:^|/)\d+/rank\.(\d{1,6})/(?:stdout|stderr)$")
_RANK_NAME = re.compile(r"(?:^|[_.-])rank[_.-]?(\d{1,6})(?=[_.-]|$)", re.IGNORECASE)


@lru_cache(maxsize=1 << 16)   # asked 2-3 times per source (runs, jobs, the readers)
def rank_of_path(path: str) -> tuple[int, str] | None:
    """(rank, the directory holding all ranks' files) of a per-rank log file's path, else
    None: ``run/attempt_0/3/stdout.log`` -> (3, "run"); ``out/1/rank.03/stdout`` -> (3,
    "out"); ``logs/log_rank_3.txt`` -> (3, "logs")."""
    p = path.split("::")[-1].replace("\\", "/")
    for suffix in COMPRESSED:
        if p.endswith(suffix):
            p = p[: -len(suffix)]
    for rx in (_TORCHRUN_DIR, _MPIRUN_DIR):
        m = rx.search(p)
        if m:
            root = p[: m.start()] if m.start() > 0 or p.startswith("/") else ""
            return int(m.group(1)), root.rstrip("/") or "."
    base = p.rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    m = _RANK_NAME.search(stem)
    if m:
        return int(m.group(1)), (p.rsplit("/", 1)[0] if "/" in p else ".")
    return None


