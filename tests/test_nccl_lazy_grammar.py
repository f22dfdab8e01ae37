"""The NCCL reader imports its pyparsing grammar only for a message the grammar may read
(issue 32: a log whose NCCL lines are all of other kinds does not pay for pyparsing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dptrace.formats.nccl import grammar, read

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "trainlog" / "andrewor14_tf_keras_rank0_stderr.log"

SCRIPT = r"""
import json, sys
if sys.argv[2] == "grammar":
    import dptrace.formats.nccl.grammar   # the grammar there from the start
import dptrace
ds = dptrace.load(sys.argv[1])
tables = {n: ds[n].astype(str).to_dict("list") for n in sorted(ds.tables) if n.startswith("nccl")}
print(json.dumps({"pyparsing": "pyparsing" in sys.modules, "tables": tables}))
"""


def _load(path: Path, how: str) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path), how], capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_first_words_are_the_grammars():
    assert frozenset(grammar.BY_FIRST_WORD) == read.GRAMMAR_FIRST_WORDS


def test_may_read_says_yes_to_every_message_the_grammar_reads():
    for line in LOG.read_text(errors="replace").splitlines():
        found = read._LINE.search(line)
        if found is None or found["level"] != "INFO":
            continue
        msg = (found["message"] or "").rstrip()
        if grammar.message(msg) is not None:
            assert read._may_read(msg), msg


def test_nccl_lines_of_other_kinds_do_not_import_pyparsing(tmp_path):
    # the real log's NCCL INFO lines the grammar does not read (affinity, rings, launch
    # mode) and its NCCL warning: NCCL lines, a warning event, no message for the grammar
    kept = [line for line in LOG.read_text(errors="replace").splitlines()
            if " NCCL WARN " in line or (" NCCL INFO " in line and not read._may_read(
                line.split(" NCCL INFO ", 1)[1].rstrip()))]
    assert len(kept) >= 5
    log = tmp_path / "nccl_other_kinds.log"
    log.write_text("\n".join(kept) + "\n")
    lazy, eager = _load(log, "lazy"), _load(log, "grammar")
    assert lazy["pyparsing"] is False and eager["pyparsing"] is True
    assert lazy["tables"] == eager["tables"] and lazy["tables"]
    # a log with messages the grammar reads still imports it, and reads them
    assert _load(LOG, "lazy")["pyparsing"] is True
