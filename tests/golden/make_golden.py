"""Record the ``--json`` report of every directory of ../shared/realdata and of
examples/data, the reference that tests/test_golden_json.py compares against.

Run from the repository root, with ../shared beside the clone:

    python tests/golden/make_golden.py

Re-record only when a change of output is intended (say which in the commit message):
the test then holds the new numbers. A restructuring must pass the test unchanged.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))


def inputs() -> dict[str, str]:
    """name -> the path as a user would type it from the repository root."""
    real = ROOT.parent / "shared" / "realdata"
    found = {d.name: f"../shared/realdata/{d.name}" for d in sorted(real.iterdir()) if d.is_dir()}
    found["examples_data"] = "examples/data"
    return found


def report_dict(path: str) -> dict:
    """What ``dptrace report PATH --json`` writes, as data (the CLI's steps, in-process)."""
    import dptrace
    from dptrace.reports import json_report

    ds = dptrace.load(path)
    report = dptrace.report(ds)
    return json.loads(json_report.dumps(report, report.exit_code))


def main() -> None:
    os.chdir(ROOT)
    for name, path in inputs().items():
        data = report_dict(path)
        data.pop("dptrace_version", None)
        out = HERE / f"{name}.json.gz"
        text = json.dumps(data, indent=0, ensure_ascii=False, sort_keys=True)
        with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
            fh.write(text.encode("utf-8"))   # mtime 0: the same output, the same bytes
        print(f"{name}: {sum(len(t) for s in data['sections'].values() for t in s['tables'].values())} rows -> {out.name}")


if __name__ == "__main__":
    main()
