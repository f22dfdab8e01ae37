"""The faces of the findings (issue 15, part 2 and 4): ``dptrace.findings(ds)``, thresholds
overridden by kind (``--threshold``, ``thresholds=``), ``dptrace report --fail-on`` and its
exit code, and the evidence of each finding resolved to its report row (the HTML links; the
real-browser test follows them)."""

from __future__ import annotations

import json
from pathlib import Path

import _cache
import pandas as pd
import pytest

import dptrace
from dptrace.cli import main
from dptrace.exitcodes import EXIT_FAILURE, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from dptrace.findings import Finding, ev, frame
from dptrace.findings import thresholds as th
from dptrace.reports.evidence import first, locate

FIX = Path(__file__).parent / "fixtures"
REAL = Path(__file__).resolve().parents[2] / "shared" / "realdata"
HVD = FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"
SN = FIX / "trainlog" / "ug_sn30_multinode_from_docs.md"
THETA = FIX / "mpitrace" / "alcfws_theta_knl32"


def test_findings_is_the_report_s_table():
    ds = dptrace.load([HVD, SN, THETA])
    got = dptrace.findings(ds)
    want = dptrace.report(ds).tables["findings.findings"]
    pd.testing.assert_frame_equal(got, want)
    kinds = set(got["kind"].astype(str))
    assert {"negotiation_straggler", "throughput_straggler", "small_message_allreduce"} <= kinds
    # the package stays a package under the same name
    import dptrace.findings.rules as rules

    assert "negotiation_straggler" in rules.kinds()


def test_a_threshold_override_moves_the_line():
    ds = dptrace.load(SN)
    default = dptrace.findings(ds)
    row = default[default["kind"] == "throughput_straggler"].iloc[0]
    assert row["threshold"] == th.overridable()["throughput_straggler"].default == 5.0
    below = float(row["value"])          # instance 0's % below the median
    assert below > 5.0
    kept = dptrace.findings(ds, thresholds={"throughput_straggler": below - 0.1})
    hit = kept[kept["kind"] == "throughput_straggler"]
    assert len(hit) == 1 and hit["threshold"].iloc[0] == pytest.approx(below - 0.1)
    gone = dptrace.findings(ds, thresholds={"throughput_straggler": below + 0.1})
    assert "throughput_straggler" not in set(gone["kind"].astype(str))


@pytest.mark.parametrize("given, words", [
    ({"bogus": 1}, "no threshold named 'bogus'"),
    ({"throughput_straggler": "ten"}, "is not a number"),
    ({"throughput_straggler": -1}, "finite number >= 0"),
    ({"throughput_straggler": float("inf")}, "finite number >= 0"),
])
def test_a_bad_threshold_is_a_clear_error(given, words):
    ds = dptrace.load(SN)
    with pytest.raises(dptrace.DptraceError, match=words):
        dptrace.findings(ds, thresholds=given)


def test_threshold_texts():
    assert th.parse_overrides(["throughput_straggler=10", " negotiation_straggler = 75 "]) == {
        "throughput_straggler": 10.0, "negotiation_straggler": 75.0}
    with pytest.raises(ValueError, match="KIND=VALUE"):
        th.parse_overrides(["throughput_straggler"])


def _run(args: list[str], capsys) -> tuple[int, str]:
    code = main(["report", *args, "--width", "120"])
    return code, capsys.readouterr().out


def test_fail_on(capsys, tmp_path):
    # the Horovod timeline: warnings (rank 0 last in every negotiation), nothing critical
    assert _run([str(HVD)], capsys)[0] == EXIT_OK
    assert _run([str(HVD), "--fail-on", "critical"], capsys)[0] == EXIT_OK
    code, out = _run([str(HVD), "--fail-on", "warning"], capsys)
    assert code == EXIT_FINDINGS == 4
    assert "negotiation" in out                      # the report was still written
    code, out = _run([str(HVD), "--fail-on", "warning", "--json", "-"], capsys)
    assert code == 4 and json.loads(out)["exit_code"] == 4
    # a higher threshold silences the straggler; the timeline's other warnings remain
    code, out = _run([str(HVD), "--json", "-", "--threshold", "negotiation_straggler=100.1"],
                     capsys)
    kinds = {f["kind"] for f in json.loads(out)["sections"]["findings"]["tables"]["findings"]}
    assert "negotiation_straggler" not in kinds
    # never over a usage error or a failure
    assert _run([str(HVD), "--threshold", "nope=1"], capsys)[0] == EXIT_USAGE
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert _run([str(empty), "--fail-on", "warning"], capsys)[0] == EXIT_FAILURE


def test_fail_on_critical_fires_on_a_critical_finding(capsys):
    polaris = FIX / "mpitrace" / "mlprof_polaris_run4"    # rank files disagree: critical
    code, out = _run([str(polaris), "--fail-on", "critical", "--json", "-"], capsys)
    found = json.loads(out)["sections"]["findings"]["tables"]["findings"]
    assert any(f["severity"] == "critical" for f in found)
    assert code == EXIT_FINDINGS


def test_evidence_with_spaces_is_structured():
    """A value with spaces (a file name, SambaFlow's 'e2e samples_per_sec') stays whole: the
    evidence is its table and a key, never text split again."""
    f = frame([Finding("warning", "throughput_straggler", "instance", "instance 0", "m.",
                       ev("throughput.instances", source="a b.md", name="e2e samples_per_sec",
                          straggler=True))])
    assert f["evidence"].iloc[0] == ("throughput.instances source=a b.md "
                                     "name=e2e samples_per_sec straggler=True")
    assert f["evidence_table"].iloc[0] == "throughput.instances"
    assert json.loads(f["evidence_key"].iloc[0]) == [
        {"source": "a b.md", "name": "e2e samples_per_sec", "straggler": True}]
    assert first(f.iloc[0]) == ("throughput.instances", {
        "source": "a b.md", "name": "e2e samples_per_sec", "straggler": True})


@pytest.mark.parametrize("name", ["mpitrace", "horovod_timeline", "sntilestat", "trainlog",
                                  "perrank", "scaling"])
def test_every_finding_resolves_to_its_row(name):
    """Each finding's evidence names a report table and a row whose values are the ones the
    evidence states (the row the HTML links to), or an input table (no link)."""
    if not (REAL / name).is_dir():
        pytest.skip("shared/realdata is not beside the clone")
    report = dptrace.report(_cache.load(REAL / name))
    tables = report.tables
    findings = tables["findings.findings"]
    resolved = 0
    for f in findings.itertuples(index=False):
        found = locate(tables, *first(f), f.run)
        if found is None:
            assert "." not in f.evidence_table.split("; ")[0], f.evidence   # an input table
            continue
        section, table, row = found
        assert row is not None, f.evidence
        df = tables[f"{section}.{table}"]
        for col, value in first(f)[1].items():
            cell = df[col].iloc[row]
            assert str(int(cell) if isinstance(cell, float) and cell.is_integer() else cell) \
                == str(value), (f.evidence, col)
        if not pd.isna(f.rank) and "rank" in df.columns:
            assert int(df["rank"].iloc[row]) == int(f.rank), f.evidence
        resolved += 1
    assert resolved or findings.empty


def test_the_readme_lists_every_overridable_threshold():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for kind, t in th.overridable().items():
        assert f"| `{kind}` | {t.default:g} | {t.unit} |" in readme, kind


def test_a_finding_on_several_sources_links_each():
    """A cross-source straggler joins the evidence of each source with '; ': the HTML links
    every piece to its own row (the staged run of tests/test_findings_straggler.py: the real
    4-rank mpitrace job whose rank 3 computes longer, with a 4-rank timeline whose rank 3 is
    last)."""
    import re

    ds = dptrace.load({"staged": [FIX / "mpitrace" / "ibm_mpitrace_callstack_4rank",
                                  FIX / "horovod" / "synthetic_v0201_packed.json"]})
    report = dptrace.report(ds)
    f = report.tables["findings.findings"]
    cross = f[f["kind"] == "cross_source_straggler"]
    assert len(cross) == 1 and "; " in cross["evidence"].iloc[0]
    page = report.to_html()
    item = page.split("<li class='finding critical'>", 1)[1].split("</li>", 1)[0]
    hrefs = re.findall(r"href='#([^']+)'", item)
    assert len(hrefs) >= 2
    assert {h.split("-")[1] for h in hrefs} >= {"communication", "horovod"}
    for h in hrefs:
        assert f"id='{h}'" in page, h
