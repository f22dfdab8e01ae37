"""``dptrace survey ROOT...`` and ``dptrace cache info|compact|clear``: wiring only.

``add_parser(sub)`` adds both commands to dptrace's subcommands; ``run(args)`` runs the
one parsed and returns the exit code (:mod:`dptrace.exitcodes`): 0 when every run was
read, 1 when some run is partial, failed or could not be read (its row says why), 2 for
a usage error, 3 when no job folder was found or none gave data. Imports no pandas at
module level.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..exitcodes import EXIT_FAILURE, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE

COMMANDS = ("survey", "cache")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``survey`` and ``cache`` to ``sub`` (dptrace's subparsers)."""
    s = sub.add_parser(
        "survey", help="every run under some roots: one row each, through a Parquet cache",
        description="Survey a tree of job folders: each folder that holds files (or a "
        "per-rank layout) is read as `dptrace report FOLDER` reads it, analysed, and "
        "summed up in one row per run; with --cache, a second survey reads the cache.")
    s.add_argument("roots", nargs="*", metavar="ROOT", help="directories to survey")
    s.add_argument("--cache", metavar="DIR", help="the fleet cache directory (created when "
                   "missing; default: none, everything is read again)")
    s.add_argument("--manifest", metavar="FILE", help="a file listing job folders, one per "
                   "line (for slow file systems: no walk)")
    s.add_argument("--since", metavar="DATE", help="only job folders with a file modified "
                   "since DATE (2026-11-01 or 2026-11-01T08:00, UTC)")
    s.add_argument("--engine", default="auto", help="auto, serial, processes, dask, "
                   "dask://HOST:PORT, slurm, pbs (default auto)")
    s.add_argument("--workers", type=int, metavar="N", help="workers of the engine")
    s.add_argument("--engine-config", metavar="FILE", help="a TOML file whose "
                   "[tool.dptrace.fleet.<engine>] table configures the engine (Slurm/PBS: "
                   "queue, account, walltime, interface, local directory, adapt)")
    s.add_argument("--batch", type=int, default=64, metavar="N",
                   help="job folders per task (default 64; smaller when there are fewer "
                   "than 16 tasks' worth)")
    s.add_argument("--timeout", type=float, metavar="S",
                   help="seconds per job folder; a folder over it is a row with status "
                   "timeout")
    s.add_argument("--warmup", type=float, default=0.1, metavar="FRACTION",
                   help="share of each instance's steps dropped as warm-up (default 0.1)")
    s.add_argument("--threshold", action="append", default=[], metavar="KIND=VALUE",
                   help="override a finding's threshold (repeatable), as for report")
    s.add_argument("--json", metavar="FILE", help="write the fleet, its findings, ranks and "
                   "summary as JSON ('-': stdout, replacing the terminal summary)")
    s.add_argument("--html", metavar="FILE", help="write the fleet dashboard (offline HTML: "
                   "throughput per GPU over time, findings by kind, hosts by straggler runs) "
                   "and, beside it in FILE_reports/, the reports of the most interesting "
                   "runs it links")
    s.add_argument("--html-reports", type=int, default=50, metavar="N",
                   help="runs whose own report --html writes and links (default 50; 0: none)")
    s.add_argument("--out", metavar="FILE", help="write the fleet table: fleet.parquet or "
                   "fleet.csv (findings and ranks beside it: FILE-findings.*, FILE-ranks.*)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.add_argument("--width", type=int, help="terminal width (default: detected)")
    s.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    c = sub.add_parser("cache", help="the fleet cache: info, compact, clear")
    c.add_argument("action", choices=("info", "compact", "clear"))
    c.add_argument("directory", metavar="DIR", help="the cache directory")
    c.add_argument("--json", action="store_true", help="print info as JSON")
    c.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def run(args: argparse.Namespace) -> int:
    """Run ``survey`` or ``cache`` (``args.command``); the exit code."""
    from rich.console import Console
    from rich.markup import escape

    from ..errors import DptraceError

    err = Console(stderr=True, highlight=False)
    try:
        if args.command == "cache":
            return _cache(args)
        return _survey(args, err)
    except DptraceError as exc:
        if getattr(args, "debug", False):
            raise
        err.print(f"[red]dptrace:[/red] {escape(str(exc))}", soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("dptrace: interrupted; the cache holds every finished batch (survey again "
                  "to resume)")
        return 130


def _survey(args: argparse.Namespace, err: Any) -> int:
    from rich.console import Console

    from ..errors import DptraceError
    from ..findings.thresholds import parse_overrides
    from . import summary
    from .api import survey

    if not args.roots and not args.manifest:
        raise DptraceError("survey: name a ROOT or --manifest FILE")
    if args.out and not args.out.endswith((".parquet", ".csv")):
        raise DptraceError(f"--out {args.out}: name a .parquet or .csv file")
    for option, target in (("--html", args.html), ("--out", args.out)):
        folder = os.path.dirname(os.path.abspath(target)) if target else ""
        if target and (os.path.isdir(target) or not os.path.isdir(folder)):
            raise DptraceError(f"{option} {target}: not a file in an existing directory")
    if not 0 <= args.warmup < 1:
        raise DptraceError(f"--warmup {args.warmup}: a fraction in [0, 1)")
    try:
        thresholds = parse_overrides(args.threshold)
    except ValueError as exc:
        raise DptraceError(str(exc)) from None
    with _bar(err, not args.no_progress) as progress:
        fleet = survey(args.roots, cache=args.cache, manifest=args.manifest, since=args.since,
                       engine=args.engine, workers=args.workers, batch=args.batch,
                       warmup=args.warmup, thresholds=thresholds, timeout=args.timeout,
                       engine_config=args.engine_config, progress=progress)
    if args.out:
        _write_out(fleet, args.out)
    if args.html:
        from .html import write as write_html

        write_html(fleet, args.html, reports=max(0, args.html_reports))
    if args.json:
        text = json.dumps(to_json(fleet), ensure_ascii=False, default=str)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
    if args.json != "-":
        summary.render(fleet, Console(width=args.width, highlight=False))
    return exit_code(fleet)


def exit_code(fleet: Any) -> int:
    """0: every run ok; 1: some run partial, failed or unreadable; 3: no run gave data."""
    status = fleet.fleet["status"].astype(object)
    if not len(status) or not status.isin(("ok", "partial")).any():
        return EXIT_FAILURE
    return EXIT_OK if (status == "ok").all() else EXIT_PARTIAL


def to_json(fleet: Any) -> dict[str, Any]:
    """The survey as JSON-ready data: fleet, findings, ranks (records) and the summary."""
    from . import summary

    def records(df: Any) -> list[dict[str, Any]]:
        return json.loads(df.to_json(orient="records", date_format="iso"))

    return {"fleet": records(fleet.fleet), "findings": records(fleet.findings),
            "ranks": records(fleet.ranks), "summary": summary.summary(fleet)}


def _write_out(fleet: Any, out: str) -> None:
    """The fleet table to ``out`` (.parquet with its explicit schema, or .csv), findings
    and ranks beside it."""
    from .. import store

    stem, ext = os.path.splitext(out)
    for df, name, path in ((fleet.fleet, "fleet", out),
                           (fleet.findings, "fleet_findings", f"{stem}-findings{ext}"),
                           (fleet.ranks, "fleet_ranks", f"{stem}-ranks{ext}")):
        if ext == ".parquet":
            store.write_frame(df, path, name)
        else:
            df.to_csv(path, index=False)


class _bar:
    """A progress bar of job folders on stderr (cached / parsed / failed), a terminal only."""

    def __init__(self, err: Any, on: bool) -> None:
        self.err, self.on = err, on and err.is_terminal
        self.progress: Any = None

    def __enter__(self) -> Any:
        if not self.on:
            return None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(TextColumn("surveying"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                 console=self.err, transient=True)
        self.progress.__enter__()
        task = self.progress.add_task("survey", total=None, counts="")

        def update(counts: dict[str, int], total: int) -> None:
            done = sum(counts.values())
            self.progress.update(task, total=total, completed=done,
                                 counts=f"{counts['cached']} cached, {counts['parsed']} "
                                 f"parsed, {counts['analysed']} analysed, "
                                 f"{counts['failed']} failed")
        return update

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)


def _cache(args: argparse.Namespace) -> int:
    from .cache import Cache

    cache = Cache(args.directory, create=False)
    if args.action == "info":
        info = cache.info()
        if args.json:
            sys.stdout.write(json.dumps(info) + "\n")
        else:
            for part in ("tables", "derived"):
                p = info[part]
                info_line = f"{p['tables']} tables, {p['files']} files, {p['bytes']:,} bytes"
                info[part] = info_line
            for k, v in info.items():
                sys.stdout.write(f"{k}: {v}\n")
    elif args.action == "compact":
        done = cache.compact()
        sys.stdout.write(f"compacted {done['folders']} job folders into {done['batches']} "
                         f"batches; {done['files_removed']} files removed\n")
    else:
        n = cache.clear()
        sys.stdout.write(f"cleared {args.directory}: {n} files removed\n")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """A parser of these commands alone (tests, ``python -m dptrace.fleet.command``)."""
    p = argparse.ArgumentParser(prog="dptrace")
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    return p


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(build_parser().parse_args()))
