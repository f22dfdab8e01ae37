"""The rich drawer of the NCCL tests section: one line per test (the tests table of
:mod:`.sections`); busbw by size is in the HTML figure and the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...reports.fit import KEY, PATH, TEXT, Col, FitTable, common_dir
from ...reports.fmt import bin_label, count, human_bytes, missing, num, pct, text
from ...reports.model import Section

#: the tests table, when it does not fit the terminal (see :mod:`dptrace.reports.fit`)
TESTS_DROP = ("device", "sizes", "hosts", "placement")


def draw_nccl_tests(section: Section, opts: Mapping[str, Any] | None = None
                    ) -> RenderableType:
    tests = section.tables["tests"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    where, names = common_dir(tests["source"].astype(str))
    if where:
        parts.append(Text(f"in {where}", style="dim"))
    table = FitTable([Col("input", PATH), Col("test", KEY), Col("ranks"), Col("hosts"),
                      Col("device", TEXT, floor=12), Col("sizes"), Col("peak busbw GB/s"),
                      Col("at size"), Col("placement", KEY), Col("avg busbw GB/s")],
                     TESTS_DROP, pad_edge=False)
    several = tests["source"].astype(str).duplicated(keep=False).tolist()
    for name, many, r in zip(names, several, tests.itertuples(index=False), strict=True):
        label = f"{name} #{r.block}" if many else name      # a source with several tests
        table.add_row(label, text(r.test) or "?", count(r.nranks), count(r.nhosts),
                      text(r.device), count(r.sizes), num(r.peak_busbw_gbps, 2),
                      "-" if missing(r.peak_size_bytes) else human_bytes(r.peak_size_bytes),
                      text(r.peak_placement), _as_printed(r.avg_busbw_gbps))
    parts.append(table)
    jvs = section.tables.get("job_vs_system")
    if jvs is not None and not jvs.empty:
        parts.append(Text("The job's collectives against this system's nccl-tests "
                          "(out-of-place busbw at the job's message size)", style="bold"))
        jt = FitTable([Col("evidence", TEXT, floor=12), Col("collective", KEY),
                       Col("size bin"), Col("calls"), Col("share of time"),
                       Col("job busbw GB/s"), Col("system GB/s"), Col("job / system")],
                      ("calls",), pad_edge=False)
        for r in jvs.itertuples(index=False):
            beyond = "*" if bool(r.beyond_tested) else ""
            jt.add_row(text(r.evidence), text(r.collective),
                       bin_label(int(r.bin), int(r.bin_hi_bytes)), count(r.calls),
                       pct(r.time_share), num(r.busbw_gbps, 3),
                       num(r.system_busbw_gbps, 3) + beyond, pct(r.ratio))
        parts.append(jt)
        if jvs["beyond_tested"].astype(bool).any():
            parts.append(Text("* above the largest size the test ran: its busbw there",
                              style="dim"))
    return Group(*parts)


def _as_printed(v: object) -> str:
    """The average as nccl-tests prints it (``%g``: 9.76937, 124.584); missing '-'."""
    return "-" if missing(v) else f"{float(v):g}"  # type: ignore[arg-type]
