"""mpiP reports: the sections of every report in a source (see :mod:`.grammar`).

Fills ``mpi_ranks`` (app and MPI time per task), ``mpi_routines`` (per rank where the report
has per-rank rows, else per job with ``rank`` null) and ``mpi_callsites``. The source is
read line by line; each line loses the quoting of a mail archive or a doc page first
(``<span ...>&gt; ``, ``> ``). A source may hold several reports (a document pasting two
runs): a new one starts at ``@ mpiP`` or where a section seen already comes again; each is
its own ``job`` (the file name, plus ``#k``).

What is derived, and from what:

* ``mpi_ranks``: one row per ``MPI Time`` task row (AppTime -> ``elapsed_s``, MPITime ->
  ``comm_time_s``, the host from ``MPI Task Assignment``), origin ``mpip_report``. A concise
  report names only the tasks with the largest and smallest times (``Task Time
  Statistics``): those rows, with the ``comm_role`` they had. The ``*`` row is checked
  against the sum of the task rows (a warning when they disagree beyond mpiP's rounding).
* ``mpi_routines``: the callsites' rows summed per rank and routine: calls (Count), time
  (Count x Mean, ms) and bytes (the sent statistics' Sum). Where the per-rank rows of a
  callsite do not add up to its ``*`` row (a ``-t`` threshold left rows out), the routines
  are per job (``rank`` null) from the ``*`` rows. A concise report gives per-job rows: time
  Tasks x Mean, bytes Tasks x Mean, calls from the ``Aggregate Time`` counts when every
  callsite of the routine is among its top twenty (else null).

Damage is never read into numbers: inside a section, a line that starts like a row and does
not match the row grammar whole is skipped with an error naming its line; so is a last line
without its line break. A report that stops before ``@--- End of Report`` (a copy cut
short) is read up to the cut with a problem naming the file's last line; the routines whose
callsite rows the cut may have split are left out of ``mpi_routines`` (their callsite rows
are kept). ``...`` where a copy left rows out is named with its line, the rows around it are
read, and no totals are made from its section.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ... import schema
from ...errors import Problem
from ...numbers import DIGIT as D
from ...numbers import KEPT, SKIPPED, NumberError, fit, note, parse_count
from ...registry import ParseResult
from ...sources import Source
from .._problems import note_skipped
from .._units import MS_TO_US, scaled_or_error
from ..mpitrace.tables import MPI_RANKS, MPI_ROUTINES
from . import grammar as g
from .tables import MPI_CALLSITES

#: the quoting of a mail archive (``<span class="quotelev1">&gt; ``) or a reply (``> ``)
_QUOTE = re.compile(r"^(?:<[^>]*>)*(?:\s*(?:&gt;|>)(?= |$))+ ?")
_TAGS = re.compile(r"<[^>]*>")
#: ``<exe>.<ntasks>.<pid>.<k>.mpiP``: the number of tasks from the file name
_FILE_TASKS = re.compile(r"\.(\d+)\.\d+\.\d+\.mpiP$")
#: rows are named by their first field: what a row of each kind starts with
_NAMED = re.compile(rf"^[A-Z][A-Za-z0-9_]*\s+{D}")
_KINDS: dict[str, tuple[Any, re.Pattern[str]]] = {
    "mpi_time": (g.MPI_TIME, re.compile(rf"^(?:{D}+|\*)\s+(?:[-+.]|{D})")),
    "task_stats": (g.TASK_STATS,
                   re.compile(rf"^(?:Max|Min|Mean|Stddev|Aggregate)\s+(?:[-+.]|{D})")),
    "callsites": (g.CALLSITE, re.compile(rf"^{D}+\s+{D}+\s")),
    "aggregate_time": (g.AGGREGATE_TIME, _NAMED),
    "aggregate_sent": (g.AGGREGATE_SENT, _NAMED),
    "callsite_time": (g.CALLSITE_TIME, _NAMED),
    "callsite_sent": (g.CALLSITE_SENT, _NAMED),
    "callsite_time_concise": (g.CALLSITE_CONCISE, _NAMED),
    "callsite_sent_concise": (g.CALLSITE_CONCISE, _NAMED),
}


def section_kind(title: str) -> str | None:
    """The kind of rows under a section title; None for a section not read."""
    t = title.lower()
    if t.startswith("mpi time"):
        return "mpi_time"
    if t.startswith("task time statistics"):
        return "task_stats"
    if t == "callsites":
        return "callsites"
    if t.startswith("aggregate time"):
        return "aggregate_time"
    if t.startswith("aggregate sent message size"):
        return "aggregate_sent"
    concise = "(all callsites" in t
    if t.startswith("callsite time statistics"):
        return "callsite_time_concise" if concise else "callsite_time"
    if t.startswith("callsite message sent statistics"):
        return "callsite_sent_concise" if concise else "callsite_sent"
    return None


@dataclass


class _Report:
    """One report as read so far."""

    index: int
    lineno: int
    header: dict[str, str] = field(default_factory=dict)
    hosts: dict[int, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    #: kinds whose section the report closed (another section or the end came after it)
    closed: set[str] = field(default_factory=set)
    ended: bool = False
    #: the first '...' line (a copy that left rows out), and the sections that had one
    cut_at: int | None = None
    dotted: set[str] = field(default_factory=set)
    #: the number a section's title ends with: callsites ('Callsites: 32'), per-rank rows
    #: of a full report's or callsites of a concise report's 'Callsite Time statistics'
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, lineno: int, row: dict[str, Any]) -> None:
        self.rows.setdefault(kind, []).append((lineno, row))

    def get(self, kind: str) -> list[tuple[int, dict[str, Any]]]:
        return self.rows.get(kind, [])


def _unquote(text: str) -> str:
    if text[:1] in ("<", ">", "&"):
        m = _QUOTE.match(text)
        if m:
            text = text[m.end():]
        elif text.startswith("<"):
            text = _TAGS.sub("", text)
    return text


def parse(source: Source) -> ParseResult:
    """Parse one source's mpiP reports into ``mpi_ranks``, ``mpi_routines`` and
    ``mpi_callsites``."""
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        buf = bytes(raw)
    name = source.name
    lines = buf.split(b"\n")
    ends_cut = bool(buf) and not buf.endswith(b"\n")
    last = len(lines) if ends_cut else len(lines) - 1   # the file's last line number
    reports: list[_Report] = []
    bad: list[tuple[int, str]] = []
    numbers: list[Problem] = []     # fields that are not numbers of their column
    kind: str | None = None

    def start(lineno: int) -> _Report:
        reports.append(_Report(len(reports), lineno))
        return reports[-1]

    for i, raw_line in enumerate(lines):
        lineno = i + 1
        text = raw_line.decode("utf-8", "replace").rstrip("\r")
        body = _unquote(text).strip()
        if not body:
            continue
        if body[0] == "@":
            if body.startswith("@---"):
                kind = _section(body, lineno, reports, start, name, numbers)
            elif g.parse_line(g.TOOL, body) is not None:
                if reports and not reports[-1].seen:
                    reports[-1] = _Report(reports[-1].index, lineno)
                else:
                    reports.append(_Report(len(reports), lineno))
                kind = None
            elif (h := g.parse_line(g.HEADER, body)) is not None:
                # a header line after sections: the next report's header
                rep = reports[-1] if reports and not reports[-1].seen else start(lineno)
                key, value = str(h["key"]).strip(), str(h["value"])
                if key == "MPI Task Assignment":
                    t = g.parse_line(g.TASK_ASSIGNMENT, value)
                    rank = None if t is None else fit(
                        t["rank"], key, lineno, name, numbers, lo=0,
                        outcome="the line is skipped")
                    if t is not None and rank is not None:
                        rep.hosts[rank] = str(t["host"])
                else:
                    rep.header.setdefault(key, value)
            continue
        if kind is None or not reports or body.startswith("---"):
            continue
        rep = reports[-1]
        if body in ("...", "\u2026"):
            if kind not in rep.dotted:
                rep.cut_at = rep.cut_at or lineno
                rep.dotted.add(kind)
                problems.append(Problem(name, "the report is cut here ('...': rows left out): "
                                        "the rows around it are read, no totals are made from "
                                        "this section", lineno, "warning"))
            continue
        element, rowlike = _KINDS[kind]
        if not rowlike.match(body):
            continue
        if ends_cut and lineno == last:
            problems.append(Problem(name, "file does not end with a newline (cut short?): its "
                                    "last row may be cut, and was not read", lineno, "error"))
            continue
        parsed = g.parse_line(element, body)
        if parsed is None:
            bad.append((lineno, f"not a whole mpiP row of '{kind.replace('_', ' ')}' "
                                f"({len(body.split())} fields): torn or cut; skipped"))
            continue
        row = _fit(parsed.as_dict(), lineno, name, numbers)
        if row is not None:
            rep.add(kind, lineno, row)
    note_skipped(bad, name, problems, "mpiP rows")
    for k, rep in enumerate(reports):
        if not rep.ended and rep.cut_at is None and rep.seen:
            # the line before the next report starts, or the file's last line
            where = reports[k + 1].lineno - 1 if k + 1 < len(reports) else last
            problems.append(Problem(name, "the report stops before '@--- End of Report' (cut "
                                    "short, or an excerpt): read up to there", where,
                                    "warning"))
    tables = _tables(reports, name, numbers)
    note(numbers, name, problems)
    variant = ("concise" if any("task_stats" in r.seen for r in reports) else "full") \
        if reports else None
    return ParseResult(tables, problems, variant)


#: fields that say which row it is: a row whose one of these does not fit is not read
_IDS = ("task", "rank", "site", "level", "app_task", "mpi_task")


def _fit(row: dict[str, Any], lineno: int, name: str, problems: list[Problem]
         ) -> dict[str, Any] | None:
    """``row`` with each number that is not one of its column (a NumberError of the grammar:
    5,000 digits, beyond int64, '¹', nan, inf) made missing, with an error
    (:func:`dptrace.numbers.fit`); None (with an error) when such a number is one that says
    which row it is (a task, rank, site)."""
    for k in [k for k in _IDS if k in row] + [k for k in row if k not in _IDS]:
        v = row[k]
        if k in _IDS and v != "*":
            if fit(v, k, lineno, name, problems, lo=0, outcome=SKIPPED) is None:
                return None
            continue
        row[k] = fit(v, k, lineno, name, problems, outcome=KEPT)
    return row


def _mul(*xs: Any) -> float | None:
    """The product of ``xs`` (None when one is missing or the product is not finite)."""
    out = 1.0
    for x in xs:
        if x is None:
            return None
        out *= x
    return out if math.isfinite(out) else None


def _section(body: str, lineno: int, reports: list[_Report],
             start: Callable[[int], _Report], name: str, numbers: list[Problem]
             ) -> str | None:
    s = g.parse_line(g.SECTION, body)
    if s is None:
        return None
    title = str(s["title"]).strip()
    if title.lower().startswith("end of report"):
        if reports:
            reports[-1].ended = True
            reports[-1].closed.update(reports[-1].seen)
        return None
    kind = section_kind(title)
    rep = reports[-1] if reports else start(lineno)
    if rep.ended or (kind is not None and kind in rep.seen):
        rep.closed.update(rep.seen)
        rep = _Report(len(reports), lineno)
        reports.append(rep)
    rep.closed.update(rep.seen)
    if kind is not None:
        rep.seen.add(kind)
        if "count" in s:
            count = fit(s["count"], f"{title}:", lineno, name, numbers, lo=0,
                        outcome="the section is read, its count is missing")
            if count is not None:
                rep.counts[kind] = count
    else:
        rep.seen.add(f"other: {title}")
    return kind


def _job(name: str, rep: _Report, n: int) -> str:
    base = os.path.basename(name.split("::")[-1])
    base = base[:-len(".mpiP")] if base.endswith(".mpiP") else base
    return f"{base}#{rep.index + 1}" if n > 1 else base


def _nranks(name: str, rep: _Report, problems: list[Problem]) -> int | None:
    if rep.hosts:
        return max(rep.hosts) + 1
    tasks = [r["task"] for _, r in rep.get("mpi_time") if r["task"] != "*"]
    if tasks and "mpi_time" in rep.closed and "mpi_time" not in rep.dotted:
        return max(tasks) + 1
    m = _FILE_TASKS.search(name)
    if m:
        try:
            return parse_count(m.group(1))
        except NumberError as exc:
            fit(exc, "the file name's number of tasks", None, name, problems,
                outcome="the report's number of tasks is missing")
    stats = {r["stat"]: r for _, r in rep.get("task_stats")}
    if "Aggregate" in stats and "Mean" in stats and stats["Mean"]["app_s"] > 0:
        n = stats["Aggregate"]["app_s"] / stats["Mean"]["app_s"]
        if abs(n - round(n)) < 0.01:
            return round(n)
    return None


def _num(v: Any) -> Any:
    return v if not isinstance(v, float) or math.isfinite(v) else None


def _tables(reports: list[_Report], name: str, problems: list[Problem]
            ) -> dict[str, pd.DataFrame]:
    ranks: list[dict[str, Any]] = []
    routines: list[dict[str, Any]] = []
    sites: list[dict[str, Any]] = []
    n = sum(1 for r in reports if r.seen)
    for rep in reports:
        if not rep.seen:
            continue
        job, nranks = _job(name, rep, n), _nranks(name, rep, problems)
        common = {"source": name, "job": job, "nranks": nranks}
        ranks += _ranks(rep, common, name, problems)
        rep_sites = _callsites(rep, common, name, problems)
        sites += rep_sites
        routines += _routines(rep, common, rep_sites, name, problems)
    return {
        "mpi_ranks": schema.from_rows(ranks, MPI_RANKS),
        "mpi_routines": schema.from_rows(routines, MPI_ROUTINES),
        "mpi_callsites": schema.from_rows(sites, MPI_CALLSITES),
    }



def _ranks(rep: _Report, common: dict[str, Any], name: str,
           problems: list[Problem]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    total = None
    for lineno, r in rep.get("mpi_time"):
        if r["task"] == "*":
            total = (lineno, r)
            continue
        out.append({**common, "rank": r["task"], "origin": "mpip_report",
                    "host": rep.hosts.get(r["task"]), "comm_time_s": _num(r["mpi_s"]),
                    "elapsed_s": _num(r["app_s"])})
    if total is not None and out:
        _check_total(out, total, name, problems)
    stats = {r["stat"]: r for _, r in rep.get("task_stats")}
    named: dict[int, dict[str, Any]] = {}
    for stat, role in (("Max", "maximum"), ("Min", "minimum")):
        if stat not in stats:
            continue
        r = stats[stat]
        app = named.setdefault(r["app_task"], {**common, "rank": r["app_task"],
                                               "origin": "mpip_report",
                                               "host": rep.hosts.get(r["app_task"])})
        app["elapsed_s"] = _num(r["app_s"])
        mpi = named.setdefault(r["mpi_task"], {**common, "rank": r["mpi_task"],
                                               "origin": "mpip_report",
                                               "host": rep.hosts.get(r["mpi_task"])})
        mpi["comm_time_s"] = _num(r["mpi_s"])
        mpi["comm_role"] = role
    return out + [named[k] for k in sorted(named)]


def _sig_step(v: float) -> float:
    """Half a unit of the last of 3 significant digits of ``v`` (mpiP's %.3g)."""
    if not v:
        return 0.005
    return 0.5 * 10 ** (math.floor(math.log10(abs(v))) - 2)


def _check_total(rows: list[dict[str, Any]], total: tuple[int, dict[str, Any]], name: str,
                 problems: list[Problem]) -> None:
    lineno, t = total
    for col, key in (("elapsed_s", "app_s"), ("comm_time_s", "mpi_s")):
        vals = [r[col] for r in rows if r.get(col) is not None]
        if not vals or t[key] is None or not math.isfinite(t[key]):
            continue
        slack = sum(_sig_step(v) for v in vals) + _sig_step(t[key])
        if abs(sum(vals) - t[key]) > slack:
            problems.append(Problem(name, f"the '*' row's {key[:-2]} time {t[key]:g} s is not "
                                    f"the sum of the {len(vals)} task rows ({sum(vals):.4g} s): "
                                    "task rows missing?", lineno, "warning"))


def _paths(rep: _Report) -> dict[int, list[dict[str, Any]]]:
    frames: dict[int, list[dict[str, Any]]] = {}
    for _, r in rep.get("callsites"):
        frames.setdefault(r["site"], []).append(r)
    return frames


def _where(frames: list[dict[str, Any]] | None) -> dict[str, Any]:
    if not frames:
        return {}
    top = min(frames, key=lambda f: f["level"])
    path = " < ".join(f"{f['function']} ({f['file']}"
                      + (f":{f['line']})" if f.get("line") is not None else ")")
                      for f in sorted(frames, key=lambda f: f["level"]))
    return {"file": top["file"], "line": top.get("line"), "function": top["function"],
            "call_path": path}


def _callsites(rep: _Report, common: dict[str, Any], name: str, problems: list[Problem]
               ) -> list[dict[str, Any]]:
    """The callsite rows; a call's Max, Mean, Min (ms) in microseconds, exact to the printed
    decimal (missing, with an error naming the line, where x 1000 is no float)."""
    paths = _paths(rep)
    out: dict[tuple[Any, int], dict[str, Any]] = {}
    for lineno, r in rep.get("callsite_time"):
        rank = None if r["rank"] == "*" else r["rank"]
        t = _mul(r["count"], r["mean_ms"], 1e-3)
        us = {f"call_{k}_us": fit(scaled_or_error(r[f"{k}_ms"], MS_TO_US), f"{k}_ms", lineno,
                                  name, problems, outcome=KEPT) for k in ("max", "mean", "min")}
        out[(rank, r["site"])] = {
            **common, "rank": rank, "site": r["site"], "routine": "MPI_" + r["call"],
            "calls": r["count"], "time_s": _num(t), **us,
            "app_pct": _num(r["app_pct"]), "mpi_pct": _num(r["mpi_pct"]),
            **_where(paths.get(r["site"])), "lineno": lineno}
    for lineno, r in rep.get("callsite_time_concise"):
        out[(None, r["site"])] = {
            **common, "rank": None, "site": r["site"], "routine": "MPI_" + r["call"],
            "time_s": _mul(r["tasks"], r["mean"], 1e-3), "tasks": r["tasks"],
            "task_max_s": _mul(r["max"], 1e-3), "task_min_s": _mul(r["min"], 1e-3),
            "max_rank": r["max_rank"], "min_rank": r["min_rank"],
            **_where(paths.get(r["site"])), "lineno": lineno}
    for lineno, r in rep.get("callsite_sent"):
        rank = None if r["rank"] == "*" else r["rank"]
        row = out.setdefault((rank, r["site"]), {
            **common, "rank": rank, "site": r["site"], "routine": "MPI_" + r["call"],
            "calls": r["count"], **_where(paths.get(r["site"])), "lineno": lineno})
        row.update({"bytes": _num(r["sum"]), "msg_max_bytes": _num(r["max"]),
                    "msg_mean_bytes": _num(r["mean"]), "msg_min_bytes": _num(r["min"])})
    for lineno, r in rep.get("callsite_sent_concise"):
        row = out.setdefault((None, r["site"]), {
            **common, "rank": None, "site": r["site"], "routine": "MPI_" + r["call"],
            "tasks": r["tasks"], **_where(paths.get(r["site"])), "lineno": lineno})
        row["bytes"] = _mul(r["tasks"], r["mean"])
    return list(out.values())


def _complete(rep: _Report, kind: str) -> set[str]:
    """The routines whose rows of ``kind`` were all read: a full report sorts those sections
    by routine, so every routine but the last one read is whole; the last is whole when the
    section was closed by the next one (not by a cut). A concise report sorts them by time:
    a cut one has no routine known whole."""
    names = [r["call"] for _, r in rep.get(kind)]
    done = set(names)
    if kind in rep.dotted:
        return set()
    if names and kind not in rep.closed:
        if kind.endswith("_concise"):
            return set()
        done.discard(names[-1])
    return {"MPI_" + x for x in done}


def _routines(rep: _Report, common: dict[str, Any], sites: list[dict[str, Any]], name: str,
              problems: list[Problem]) -> list[dict[str, Any]]:
    region = "pcontrol" if re.search(r"(?:^|[\s,])-o\b", rep.header.get("MPIP env var", "")) \
        else "init_finalize"
    full = "callsite_time" in rep.rows
    kind = "callsite_time" if full else "callsite_time_concise"
    whole = _complete(rep, kind)
    sent_kind = "callsite_sent" if full else "callsite_sent_concise"
    sent_whole = _complete(rep, sent_kind) if sent_kind in rep.rows else set()
    if not whole:
        return []
    if len(whole) < len({"MPI_" + r["call"] for _, r in rep.get(kind)}):
        problems.append(Problem(name, "the callsite statistics are cut: the routine at the cut "
                                "is left out of mpi_routines (its callsite rows are kept)",
                                rep.get(kind)[-1][0], "warning"))
    df = pd.DataFrame([s for s in sites if s["routine"] in whole],
                      columns=["rank", "site", "routine", "calls", "time_s", "bytes"])
    df["rank"] = df["rank"].astype("Int64")
    per_rank = df[df["rank"].notna()]
    agg = df[df["rank"].isna()]
    use = agg
    # a section cut short holds whole routines only (above); one closed should hold every
    # row its title counts
    cut = kind not in rep.closed or kind in rep.dotted
    stated = None if cut else rep.counts.get(kind)
    read = len(per_rank) if full else len(agg)
    if full:
        counts = per_rank.groupby("site")["calls"].sum()
        short = [x for x, c in agg.set_index("site")["calls"].items()
                 if pd.notna(c) and counts.get(x, 0) != c]
        if stated in (None, read) and not short and not per_rank.empty:
            use = per_rank
        elif short or stated is not None and read < stated:
            problems.append(Problem(name, f"the callsite statistics hold {read} per-rank rows "
                                    f"of {stated if stated is not None else '?'} and "
                                    f"{len(short)} callsites' rows do not add up to their '*' "
                                    "row (rows below a -t threshold left out, or an excerpt): "
                                    "mpi_routines per job from the '*' rows, rank null",
                                    rep.get(kind)[0][0], "warning"))
    n_sites = None if cut else rep.counts.get("callsites")
    got = agg["site"].nunique()
    if use is agg and (n_sites is not None and got < n_sites or not full and stated is not None
                       and got < stated):
        problems.append(Problem(name, f"the callsite statistics cover {got} of "
                                f"{n_sites if n_sites is not None else stated} callsites (an "
                                "excerpt?): no mpi_routines from them", rep.get(kind)[0][0],
                                "warning"))
        return []
    if use.empty:
        return []
    calls_known = _aggregate_counts(rep) if not full else None
    out = []
    for (rank, routine), grp in use.groupby(["rank", "routine"], dropna=False, sort=True):
        calls: Any = grp["calls"].sum(min_count=len(grp)) if full else None
        if calls_known is not None:
            known = [calls_known.get(s) for s in grp["site"]]
            calls = sum(k for k in known if k is not None) if None not in known else None
        time_s = grp["time_s"].sum(min_count=len(grp))
        has_bytes = routine in sent_whole and grp["bytes"].notna().any()
        nbytes = grp["bytes"].fillna(0).sum() if has_bytes else None
        avg = nbytes / calls if nbytes is not None and calls else None
        out.append({**common, "rank": None if pd.isna(rank) else int(rank),
                    "routine": routine, "calls": None if pd.isna(calls) else int(calls),
                    "avg_bytes": avg, "bytes": nbytes,
                    "time_s": None if pd.isna(time_s) else float(time_s), "region": region})
    return out


def _aggregate_counts(rep: _Report) -> dict[int, int]:
    """Calls per callsite from the Aggregate Time table (mpiP 3.5 prints Count there)."""
    return {r["site"]: r["count"] for _, r in rep.get("aggregate_time") if "count" in r}
