"""The table of docs/trainlog.md "The job figure on real logs": what each real log states, by
hand (tests/fixtures/job_figures.json), beside what dptrace reports for it.

    python scripts/job_figures_table.py          # rewrite the table in docs/trainlog.md
    python scripts/job_figures_table.py --check  # exit 1 when the table is not current

tests/test_job_figures.py runs the check, so the docs cannot fall behind the code.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "trainlog.md"
EXPECTED = ROOT / "tests" / "fixtures" / "job_figures.json"
START, END = "<!-- job-figures:start -->", "<!-- job-figures:end -->"


def _num(x: float) -> str:
    if x != x:  # NaN
        return "-"
    return f"{x:,.6g}" if abs(x) < 1e5 else f"{x:,.0f}"


def _short(text: str, most: int = 150) -> str:
    text = re.sub(r"\s+", " ", text).replace("|", "\\|")
    return text if len(text) <= most else text[: most - 3].rstrip() + "..."


def rows() -> list[list[str]]:
    import dptrace
    from dptrace.formats.trainlog import job

    expected = json.loads(EXPECTED.read_text())
    out = []
    for key, entry in expected.items():
        path = (ROOT / key).resolve()
        parts = Path(key.rstrip("/")).parts
        name = "/".join(parts[-2:] if "generated" in parts else parts[-1:])
        name += "/" if key.endswith("/") else ""
        if not path.exists():
            continue
        ds = dptrace.load(str(path))
        table = job.job_figures(ds["throughput"], ds.runs,
                                check_ranges=job.printed_ranges(ds["train_metrics"]),
                                metrics=ds["train_metrics"])
        run_ids = [str(r) for r in ds.runs["run"]]
        split = len(run_ids) == len(entry["runs"])
        for i, run in enumerate(entry["runs"]):
            label = name if len(entry["runs"]) == 1 else f"{name} (run {i + 1})"
            if not run["figures"]:
                out.append([label, "no throughput printed", "-", "-"])
            for fig in run["figures"]:
                mine = table[table["metric"].astype(str) == fig["metric"]]
                if split:
                    mine = mine[mine["run"].astype(str) == run_ids[i]]
                gap = entry.get("dptrace_gap") and not split
                got = _num(float(mine["value"].iloc[0])) if len(mine) == 1 else "-"
                how = str(mine["how"].iloc[0]) if len(mine) == 1 else "-"
                if gap:
                    got = f"{got} for the whole file: its runs are not told apart"
                out.append([label, f"{_num(fig['value'])} {fig['metric']}: "
                            f"{_short(fig['evidence'])}", got, how])
    return out


def table() -> str:
    lines = ["| log | what the log states (read by hand) | dptrace's job figure | rule (`how`) |",
             "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows()]
    return "\n".join(lines)


def updated(doc: str) -> str:
    start, end = doc.index(START) + len(START), doc.index(END)
    return doc[:start] + "\n" + table() + "\n" + doc[end:]


def main(argv: list[str]) -> int:
    doc = DOC.read_text()
    new = updated(doc)
    if "--check" in argv:
        return 0 if new == doc else 1
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
