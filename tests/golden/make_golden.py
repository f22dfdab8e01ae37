"""Record the ``--json`` report of every directory of ../shared/realdata and of
examples/data, the reference that tests/test_golden_json.py compares against.

Run from the repository root, with ../shared beside the clone:

    python tests/golden/make_golden.py              # record all
    python tests/golden/make_golden.py --check      # write nothing: what would change
    python tests/golden/make_golden.py trainlog     # record one

Re-record only when a change of output is intended (say which in the commit message):
the test then holds the new numbers. A restructuring must pass the test unchanged.
"""

from __future__ import annotations

import argparse
import gzip
import io
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


def _record(data: dict) -> bytes:
    text = json.dumps(data, indent=0, ensure_ascii=False, sort_keys=True)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(text.encode("utf-8"))   # mtime 0: the same output, the same bytes
    return buf.getvalue()


def _diff(old: object, new: object, where: str = "", out: list[str] | None = None,
          limit: int = 40) -> list[str]:
    """Where two recordings differ (paths of changed, added and removed values)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new), key=str):
            if k not in new:
                out.append(f"- {where}/{k}")
            elif k not in old:
                out.append(f"+ {where}/{k}")
            else:
                _diff(old[k], new[k], f"{where}/{k}", out, limit)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append(f"~ {where}: {len(old)} -> {len(new)} items")
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            _diff(a, b, f"{where}[{i}]", out, limit)
    elif old != new:
        out.append(f"~ {where}: {str(old)[:80]!r} -> {str(new)[:80]!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Record (or with --check, only compare) the --json report of every "
                    "../shared/realdata directory and of examples/data in tests/golden.")
    parser.add_argument("names", nargs="*", help="only these recordings (e.g. trainlog "
                        "examples_data); default: all")
    parser.add_argument("--check", action="store_true",
                        help="write nothing: say which recordings would change, and where")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    every = inputs()
    unknown = [n for n in args.names if n not in every]
    if unknown:
        parser.error(f"unknown recordings {unknown}; known: {', '.join(every)}")
    changed = 0
    for name, path in every.items():
        if args.names and name not in args.names:
            continue
        data = report_dict(path)
        data.pop("dptrace_version", None)
        out = HERE / f"{name}.json.gz"
        blob = _record(data)
        rows = sum(len(t) for s in data["sections"].values() for t in s["tables"].values())
        if args.check:
            old = json.loads(gzip.decompress(out.read_bytes())) if out.exists() else {}
            lines = _diff(old, json.loads(gzip.decompress(blob)))
            changed += bool(lines)
            print(f"{name}: {'unchanged' if not lines else f'{len(lines)}+ differences'}")
            for line in lines:
                print(f"  {line}")
            continue
        out.write_bytes(blob)
        print(f"{name}: {rows} rows -> {out.name}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
