"""HTML face of the report: one self-contained file that works offline.

- plotly.js is inlined once, from the installed plotly (``plotly.offline.get_plotlyjs()``),
  deflated and base64-encoded: the 4.8 MB library becomes 2 MB, which keeps a report over
  every fixture under 5 MB. A vendored 9 KB decoder (``assets/tiny-inflate.js``, MIT)
  unpacks it synchronously at load, before the figures' own scripts run; nothing is fetched.
- Each figure is ``fig.to_html(full_html=False, include_plotlyjs=False)``.
- Tables are plain ``<table>`` elements (readable without JavaScript), escaped by pandas.
- Every string from an input is escaped: ``html.escape`` here, ``DataFrame.to_html(
  escape=True)`` for tables, :func:`dptrace.reports.figures.esc` inside figures; and before
  that its control, bidi and zero-width characters become visible marks
  (:mod:`.safe_text`; figures get their data through :attr:`Section.figures`, which does it).
"""

from __future__ import annotations

import base64
import html
import zlib
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import pandas as pd

from .. import __version__
from ..dataset import Dataset
from .evidence import ROW_ID, TABLE_ID, anchor, locate
from .evidence import rows as evidence_rows
from .evidence import text as evidence_text
from .fmt import is_share, table_float, table_share
from .model import Report, Section
from .registry import section_spec
from .safe_text import visible, visible_frame

ASSETS = Path(__file__).parent / "assets"
#: rows of a table written into the page (all rows are in --json and `dptrace export`)
MAX_ROWS = 200
#: tables longer than this start folded (<details> works without JavaScript)
OPEN_ROWS = 25
_CONFIG = {"displaylogo": False, "responsive": True}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#f6f7f9}
header,main{max-width:1200px;margin:0 auto;padding:0 20px}
header{padding-top:16px}h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:0 0 4px}
nav a{margin-right:12px}section{background:#fff;border:1px solid #e3e5e8;border-radius:6px;
padding:14px 18px;margin:14px 0}.caption{color:#555;margin:0 0 10px;max-width:70em}
table{border-collapse:collapse;font-size:12px;margin:4px 0}th,td{padding:2px 8px;
border-bottom:1px solid #eee;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f0f2f5;position:sticky;top:0}td:first-child,th:first-child{text-align:left}
.facts th{text-align:left;background:none}.facts td{text-align:left;white-space:normal}
details{margin:6px 0}summary{cursor:pointer;color:#345}.bad{color:#b00}.note{color:#777}
.scroll{max-height:480px;overflow:auto}figure{margin:6px 0}
ol.findings{padding-left:0;list-style:none;margin:6px 0}.finding{margin:6px 0;padding:6px 10px;
border-left:4px solid #8ab;background:#f8fafc}.finding.critical{border-color:#c00}
.finding.warning{border-color:#d90}.sev{font-weight:bold;text-transform:uppercase;
font-size:11px;margin-right:4px}.critical .sev{color:#c00}.warning .sev{color:#a60}
.info .sev{color:#378}.hint{color:#555;margin-top:2px}.evidence{font-size:12px;color:#666}
tr:target td{background:#fff3b0}
"""
#: a link to a row inside a folded table (<details>) unfolds it first, then scrolls there
_OPEN_TARGET = (
    "(function(){function show(){var id=decodeURIComponent(location.hash.slice(1));"
    "var el=id&&document.getElementById(id);if(!el)return;"
    "for(var p=el.parentElement;p;p=p.parentElement){if(p.tagName==='DETAILS')p.open=true;}"
    "el.scrollIntoView({block:'center'});}"
    "window.addEventListener('hashchange',show);show();})();")


def render(report: Report) -> str:
    """The whole dashboard as one HTML document."""
    tables = report.tables
    body = "".join(_findings(s, tables) if s.name == "findings" else _section(s)
                   for s in report.sections)
    nav = " ".join(f"<a href='#{_e(s.name)}'>{_e(s.title)}</a>" for s in report.sections)
    title = {"compare": "dptrace compare", "scaling": "dptrace scaling"}.get(
        getattr(report, "view", "report"), "dptrace report")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{title}</title><style>{_CSS}</style>{plotly_loader()}</head><body>"
        f"<header><h1>{title}</h1>{_facts_table(report)}<nav>{nav}</nav></header>"
        f"<main>{body}</main><script>{_OPEN_TARGET}</script></body></html>\n"
    )


def write_text(path: str | Path, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


def summary_html(report: Report) -> str:
    """Compact notebook summary: the header facts and each section's tables (no plots)."""
    items = "".join(
        f"<li><b>{_e(s.title)}</b>: " + ", ".join(
            f"<code>{_e(s.name)}.{_e(k)}</code> [{len(df)}]" for k, df in s.tables.items())
        + "</li>" for s in report.sections)
    return (f"<div class='dptrace-report'><b>dptrace Report</b>{_facts_table(report)}"
            f"<ul>{items}</ul><span>.tables, .figures, .to_html(path), .to_json()</span></div>")


@lru_cache(maxsize=1)
def plotly_loader() -> str:
    """A <script> that defines ``window.Plotly`` from the inlined, deflated plotly.js."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs().encode("utf-8")
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = base64.b64encode(deflate.compress(js) + deflate.flush()).decode("ascii")
    inflate = (ASSETS / "tiny-inflate.js").read_text(encoding="utf-8")
    return (
        "<script>var dptraceInflate=(function(){var module={exports:{}};\n"
        f"{inflate}\nreturn module.exports;}})();\n"
        f"(function(){{var b=atob('{packed}'),n=b.length,src=new Uint8Array(n);"
        "for(var i=0;i<n;i++)src[i]=b.charCodeAt(i);"
        f"var out=dptraceInflate(src,new Uint8Array({len(js)}));"
        "var s=document.createElement('script');"
        "s.text=new TextDecoder('utf-8').decode(out);document.head.appendChild(s);})();"
        "</script>"
    )


# -- header -----------------------------------------------------------------------------------

def _facts_table(report: Report) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in _facts(report))
    return f"<table class='facts'>{rows}</table>"


def _facts(report: Report) -> list[tuple[str, str]]:
    """(label, HTML) pairs; every input-derived value is escaped here."""
    ds = report.dataset
    src = ds.sources
    unnamed = src["status"].map({"skipped": "not recognised"}).fillna("unknown")
    formats = src["format"].astype(object).where(src["format"].notna(), unnamed).value_counts()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    facts = [("inputs", f"{len(src)} file(s): " + _e(", ".join(
        f"{n} {f}" for f, n in formats.items()))),
        ("tables", _e(", ".join(f"{k} [{len(ds[k])}]" for k in ds.tables)) or "none")]
    facts += [f for f in (_jobs_fact(ds),) if f]
    facts += _section_facts(report)
    facts.append(("not parsed", _not_parsed(src, ds.problems)))
    facts.append(("made by", f"dptrace {_e(__version__)}, {stamp}"))
    return facts


def _jobs_fact(ds: Dataset) -> tuple[str, str] | None:
    jobs: dict[str, object] = {}
    for name in ds.tables:
        df = ds[name]
        if "job" in df:
            nranks = df["nranks"] if "nranks" in df else pd.Series(pd.NA, index=df.index)
            for job, n in pd.DataFrame({"j": df["job"].astype(str), "n": nranks}).groupby(
                    "j", sort=False)["n"].max().items():
                jobs.setdefault(str(job), n)
    if not jobs:
        return None
    shown = [f"{_e(j)} ({n} ranks)" if pd.notna(n) else _e(j)
             for j, n in list(jobs.items())[:12]]
    more = f", … {len(jobs) - 12} more" if len(jobs) > 12 else ""
    return "job ids", f"{len(jobs)}: " + ", ".join(shown) + more


def _section_facts(report: Report) -> list[tuple[str, str]]:
    """The facts sections add to the header (their spec's ``facts``): one line per label,
    the sections' texts joined with '; ' in report order."""
    joined: dict[str, list[str]] = {}
    for section in report.sections:
        spec = section_spec(section.name)
        if spec is not None and spec.facts is not None:
            for label, text in spec.facts(section).items():
                joined.setdefault(label, []).append(text)
    return [(label, _e("; ".join(texts))) for label, texts in joined.items()]


#: names of skipped files shown in the header's one line (all are in its <details>)
SKIPPED_NAMES = 4


def _not_parsed(src: pd.DataFrame, problems: pd.DataFrame) -> str:
    skipped = src["status"] == "skipped"
    bad = src[(src["status"] != "ok") & ~skipped]
    items = [f"<span class='bad'>{_e(r.source)}</span> ({_e(r.status)}"
             + (f": {_e(r.message)}" if isinstance(r.message, str) and r.message else "") + ")"
             for r in bad.itertuples(index=False)]
    text = "; ".join(items) if items else (
        "nothing: every input parsed" if not skipped.any() else "every recognised input parsed")
    counted = int((problems["severity"] != "info").sum()) if len(problems) else 0
    if counted:
        text += f" — <a href='#problems'>{counted} problem(s)</a>"
    if skipped.any():
        text += _skipped_line(src[skipped])
    return text


def _skipped_line(skipped: pd.DataFrame) -> str:
    """One line, "7 files not recognised (README.md, params.json, ...)", and a <details>
    that lists each with the reason: a run directory holds READMEs and parameters."""
    names = [str(s).replace("\\", "/").rsplit("/", 1)[-1] for s in skipped["source"]]
    shown = ", ".join(names[:SKIPPED_NAMES]) + (", ..." if len(names) > SKIPPED_NAMES else "")
    n = len(names)
    rows = "".join(f"<li>{_e(r.source)}: {_e(r.message)}</li>"
                   for r in skipped.itertuples(index=False))
    return (f"<details class='skipped'><summary>{n} file{'s' if n != 1 else ''} not "
            f"recognised ({_e(shown)})</summary><ul>{rows}</ul></details>")


# -- sections ---------------------------------------------------------------------------------

def _section(section: Section) -> str:
    figs = "".join(_figure(section.name, k, fig) for k, fig in section.figures.items())
    tables = "".join(_table(k, df, section.name) for k, df in section.tables.items())
    return (f"<section id='{_e(section.name)}'><h2>{_e(section.title)}</h2>"
            f"<p class='caption'>{_e(section.caption)}</p>{figs}{tables}</section>")


def _findings(section: Section, tables: dict[str, pd.DataFrame]) -> str:
    """The findings panel: one item per finding, most severe first, each with its hint and
    a link to the section table and row of its evidence (:mod:`.evidence`); then the table."""
    df = section.tables.get("findings", pd.DataFrame())
    several = "run" in df and df["run"].nunique() > 1
    items = []
    for r in df.itertuples(index=False):
        sev = str(r.severity)
        run = f"<b>{_e(r.run)}</b>: " if several else ""
        hint = f"<div class='hint'>{_e(r.hint)}</div>" if _filled(r.hint) else ""
        items.append(f"<li class='finding {_e(sev)}'><span class='sev'>{_e(sev)}</span> "
                     f"{run}{_e(r.message)}{hint}"
                     f"<div class='evidence'>evidence: {_evidence_link(r, tables)}</div></li>")
    listing = (f"<ol class='findings'>{''.join(items)}</ol>" if items
               else "<p class='note'>no findings</p>")
    table = "".join(_table(k, d, section.name) for k, d in section.tables.items())
    return (f"<section id='{_e(section.name)}'><h2>{_e(section.title)}</h2>"
            f"<p class='caption'>{_e(section.caption)}</p>{listing}{table}</section>")


def _filled(v: object) -> bool:
    return not (v is None or v is pd.NA or (isinstance(v, float) and v != v) or v == "")


def _evidence_link(r: object, tables: dict[str, pd.DataFrame]) -> str:
    """Each piece of the evidence (a finding resting on several sources joins them with
    '; ') linked to its row (or its table, when the row is not written to the page); plain
    text when it names no table of the report."""
    run = getattr(r, "run", None)
    found = evidence_rows(getattr(r, "evidence_table", None), getattr(r, "evidence_key", None))
    if not found:   # (a findings table without the structured columns: the text as it is)
        return f"<code>{_e(str(getattr(r, 'evidence', '') or ''))}</code>"
    return "; ".join(_one_link(name, key, tables, run) for name, key in found)


def _one_link(name: str, key: dict[str, object], tables: dict[str, pd.DataFrame],
              run: object) -> str:
    text = evidence_text(name, key)
    found = locate(tables, name, key, run)
    if found is None:
        return f"<code>{_e(text)}</code>"
    section, table, row = found
    if row is not None and row < MAX_ROWS:
        target = anchor(ROW_ID, section=section, table=table, row=row)
        where = f" (row {row + 1})"
    else:
        target = anchor(TABLE_ID, section=section, table=table)
        where = ""
    return f"<a class='ev' href='#{target}'><code>{_e(text)}</code>{where}</a>"


def _figure(section: str, name: str, fig: object) -> str:
    div_id = f"fig-{section}-{name}".replace(" ", "_")
    inner = fig.to_html(full_html=False, include_plotlyjs=False,  # type: ignore[attr-defined]
                        div_id=_e(div_id), config=_CONFIG)
    return f"<figure data-figure='{_e(section)}.{_e(name)}'>{inner}</figure>"


def _table(name: str, df: pd.DataFrame, section: str = "") -> str:
    if df.empty:
        return ""
    shown = visible_frame(df.head(MAX_ROWS))
    note = (f"<p class='note'>first {MAX_ROWS} of {len(df)} rows; all rows: --json or "
            "`dptrace export`</p>") if len(df) > MAX_ROWS else ""
    shares = {c: table_share for c in shown.columns if is_share(str(c))
              and pd.api.types.is_float_dtype(shown[c])}
    body = shown.to_html(index=False, escape=True, border=0, na_rep="", float_format=table_float,
                         formatters=shares, classes="data")
    body = _row_ids(body, section, name)
    state = " open" if len(df) <= OPEN_ROWS else ""
    tid = anchor(TABLE_ID, section=section, table=name)
    return (f"<details id='{tid}'{state}><summary>table <b>{_e(name)}</b> ({len(df)} rows)"
            f"</summary><div class='scroll'>{body}</div>{note}</details>")


def _row_ids(body: str, section: str, name: str) -> str:
    """Each body row of a table written by ``DataFrame.to_html`` with its id (the cells are
    escaped, so ``<tr>`` only ever starts a row)."""
    head, sep, rows = body.partition("<tbody>")
    if not sep:
        return body
    parts = rows.split("<tr>")
    out = [parts[0]]
    for i, part in enumerate(parts[1:]):
        out.append(f"<tr id='{anchor(ROW_ID, section=section, table=name, row=i)}'>{part}")
    return head + sep + "".join(out)


def _e(value: object) -> str:
    """Text for the page: escaped, and with control, bidi and zero-width characters shown
    as marks (:func:`safe_text.visible`)."""
    return "" if value is None or value is pd.NA else html.escape(visible(str(value)))
