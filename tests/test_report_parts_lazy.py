"""A report imports the report parts (analyses, findings, sections) of the formats whose
tables its Dataset holds, and only those (issue 32: a small log's report pays for its own
format); a look-up of another format's derived table still finds it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dptrace import formats

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "straggler" / "balanced" / "train.log"
PARTS = ("analyses", "findings", "sections")

SCRIPT = r"""
import json, sys
import dptrace
ds = dptrace.load(sys.argv[1])
report = dptrace.report(ds)
parts = sorted(m for m in sys.modules if m.startswith("dptrace.formats.")
               and m.rsplit(".", 1)[-1] in ("analyses", "findings", "sections"))
from dptrace.analyses import Analyses
a = Analyses(ds)
other = a["communication.ranks"]   # mpitrace's: imported now, None for this Dataset
print(json.dumps({"tables": sorted(ds.tables), "parts": parts,
                  "sections": [s.name for s in report.sections],
                  "other": other is None,
                  "after": "dptrace.formats.mpitrace.analyses" in sys.modules}))
"""


def test_a_training_log_report_imports_only_the_training_log_parts():
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(LOG)], capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["tables"] == ["throughput", "train_metrics"]
    assert got["parts"] == [f"dptrace.formats.trainlog.{p}" for p in PARTS]
    assert got["sections"] == ["findings", "inputs", "throughput"]
    # another format's derived table: found (every analyses module imported), None here
    assert got["other"] is True and got["after"] is True


def test_reading_names_the_formats_of_the_tables_and_those_always_needed():
    assert formats.reading(["throughput"]) == ["trainlog"]
    assert formats.reading(["mllog"]) == ["mllog", "trainlog"]   # the job figures read it
    assert formats.reading(["mpi_ranks"]) == ["mpip", "mpitrace"]
    assert formats.reading([]) == []
    # the rule over every format's straggler findings lives in trainlog's findings module
    assert "trainlog" in formats.reading(["hvd_runs"], "findings")
    assert "trainlog" not in formats.reading(["hvd_runs"], "sections")
    assert formats.reading(None) == formats.names()
    assert formats.owner("dptrace.formats.nccl.sections") == "nccl"
    assert formats.owner("dptrace.reports.sections.inputs") is None
