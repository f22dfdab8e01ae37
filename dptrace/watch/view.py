"""The live view (rich) and the one-line form of a snapshot (output that is not a terminal)."""

from __future__ import annotations

from typing import Any

from ..reports.safe_text import visible as safe

#: instances shown in the live table (the straggler and the slowest first)
MAX_INSTANCES = 16
#: refreshes the trend is drawn over
TREND = 12
_BARS = "▁▂▃▄▅▆▇█"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _fig(v: Any) -> str:
    return "-" if v is None else f"{v:,.4g}"


def line(snap: Any) -> str:
    """One line per refresh: elapsed time, bytes read, each job figure, the findings' count."""
    read = sum(f["read_bytes"] for f in snap.files)
    figs = "; ".join(f"{j['metric']} {_fig(j['value'])}" for j in snap.job[:3]) or "no figure yet"
    strag = [i for i in snap.instances if i["straggler"]]
    parts = [f"[{snap.elapsed_s:,.0f} s]", f"{len(snap.files)} file(s), {_size(read)} read",
             figs]
    if strag:
        parts.append(f"straggler {strag[0]['instance']}")
    if snap.findings:
        parts.append(f"{len(snap.findings)} finding(s): "
                     + " | ".join(safe(f["message"]) for f in snap.findings[:3]))
    if snap.final:
        parts.insert(0, "final")
    return "  ".join(parts)


def _findings_age(snap: Any) -> str:
    """' (ordinary ones as of 40 s ago)' when the ordinary findings shown are an earlier
    refresh's (:meth:`dptrace.watch.snapshot.Live.ordinary_due`), else ''."""
    at = getattr(snap, "findings_elapsed_s", None)
    if at is None or snap.elapsed_s - at < 0.5:
        return ""
    return f" (ordinary ones as of {snap.elapsed_s - at:,.0f} s ago)"


def trend(values: list[float]) -> str:
    """A sparkline of the job figure over the last refreshes."""
    vals = [v for v in values[-TREND:] if v is not None]
    if len(vals) < 2:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0
    return "".join(_BARS[min(7, int((v - lo) / span * 7.999))] for v in vals)


def render(snap: Any) -> Any:
    """The live view: job figures, per-instance table (straggler marked), findings, files."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    head = Text(f"dptrace watch  {snap.elapsed_s:,.0f} s"
                + ("  (final)" if snap.final else ""), style="bold")
    job = Table(title="Job figure (after warm-up)", title_justify="left", expand=False)
    for col in ("run", "metric", "value", "how", "trend"):
        job.add_column(col, justify="right" if col == "value" else "left")
    for j in snap.job:
        hist = j.get("trend") or []
        job.add_row(safe(str(j["run"])), j["metric"], _fig(j["value"]), str(j["how"] or ""),
                    trend(hist))
    inst = Table(title="Instances", title_justify="left")
    for col in ("source", "instance", "metric", "value", "rows", ""):
        inst.add_column(col)
    rows = sorted(snap.instances, key=lambda r: (not r["straggler"], r["value"] or 0))
    for r in rows[:MAX_INSTANCES]:
        inst.add_row(safe(str(r["source"]).rsplit("/", 1)[-1]), safe(str(r["instance"] or "")),
                     r["metric"], _fig(r["value"]), str(r["rows"]),
                     "straggler" if r["straggler"] else "")
    finds = Table(title="Findings" + _findings_age(snap), title_justify="left",
                  show_header=False)
    finds.add_column("severity")
    finds.add_column("message")
    for f in snap.findings:
        finds.add_row(f["severity"], safe(f["message"]))
    files = Table(title="Inputs", title_justify="left")
    for col in ("file", "read", "size", "idle"):
        files.add_column(col)
    for f in snap.files[:MAX_INSTANCES]:
        files.add_row(safe(str(f["file"])), _size(f["read_bytes"]), _size(f["size_bytes"]),
                      f"{f['idle_s']:,.0f} s")
    parts: list[Any] = [head, job]
    if snap.instances:
        parts.append(inst)
    if snap.findings:
        parts.append(finds)
    parts.append(files)
    for note in snap.notes[-3:]:
        parts.append(Text(safe(note), style="dim"))
    return Group(*parts)
