"""Command line: ``dptrace report|export|schema|formats``. It only wires arguments to the library.

Exit codes (also in ``dptrace --help`` and the README):
  0  every input was parsed
  1  partial: the report was written, but an input or part of one was skipped
  2  usage error (bad option, unknown --format)
  3  failure: no input gave any data
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import __version__, api, registry, schema
from .dataset import Dataset
from .errors import DptraceError
from .reports import export, json_report, model, terminal

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, EXIT_FAILURE = 0, 1, 2, 3
#: inputs larger than this (in total) get a progress bar
PROGRESS_BYTES = 64 << 20

_EPILOG = """exit codes:
  0  every input was parsed
  1  partial: report written, but an input or part of one was skipped (see Problems)
  2  usage error
  3  failure: no input gave any data
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dptrace", description="Why does my data-parallel training job run slow?",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"dptrace {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="parse inputs and print a report",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("paths", nargs="+", help="files, globs or directories (.gz/.bz2/.xz ok)")
    r.add_argument("--format", default="auto", help="force a format (see `dptrace formats`)")
    r.add_argument("--json", metavar="FILE", help="also write the report as JSON ('-': stdout, "
                   "replacing the terminal report)")
    r.add_argument("--html", metavar="FILE", help="also write the self-contained HTML dashboard")
    r.add_argument("--warmup", type=float, default=0.1, metavar="FRACTION",
                   help="share of each instance's steps dropped as warm-up (default 0.1)")
    r.add_argument("--width", type=int, help="terminal width (default: detected)")
    r.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    _export_parser(sub)
    sub.add_parser("schema", help="print every table's columns, dtypes, units and meaning")
    sub.add_parser("formats", help="list the input formats dptrace reads")
    return p


def _export_parser(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("export", help="parse inputs and write every table to a directory",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("paths", nargs="+", help="files, globs or directories (.gz/.bz2/.xz ok)")
    e.add_argument("--to", required=True, metavar="DIR", help="directory for <table>.<format>")
    e.add_argument("--format", default="csv", choices=export.FORMATS,
                   help="file format (default csv; parquet needs 'dptrace[parquet]')")
    e.add_argument("--input-format", default="auto", metavar="NAME",
                   help="force the input format (see `dptrace formats`)")
    e.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(width=getattr(args, "width", None), highlight=False)
    err = Console(stderr=True, highlight=False)
    try:
        if args.command == "schema":
            return _schema(console)
        if args.command == "formats":
            return _formats(console)
        if args.command == "export":
            return _export(args, err)
        return _report(args, console, err)
    except DptraceError as exc:
        if args.debug if hasattr(args, "debug") else False:
            raise
        err.print(f"[red]dptrace:[/red] {escape(str(exc))}", soft_wrap=True)
        return EXIT_USAGE
    except Exception as exc:  # last resort: one clear line, traceback with --debug
        if getattr(args, "debug", False):
            raise
        err.print(f"[red]dptrace: internal error:[/red] {type(exc).__name__}: {exc} "
                  "(rerun with --debug for the traceback)")
        return EXIT_FAILURE


def _report(args: argparse.Namespace, console: Console, err: Console) -> int:
    registry.get(args.format) if args.format != "auto" else None
    ds = _load_with_progress(args.paths, args.format, err)
    code = exit_code(ds)
    report = model.build(ds, warmup=args.warmup)
    if args.json != "-":
        terminal.render(report, console)
    if args.html:
        report.to_html(args.html)
    if args.json:
        text = json_report.dumps(report, code)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
    return code


def _export(args: argparse.Namespace, err: Console) -> int:
    export.check_format(args.format)
    registry.get(args.input_format) if args.input_format != "auto" else None
    ds = _load_with_progress(args.paths, args.input_format, err)
    written = export.export(ds, args.to, args.format)
    err.print(f"dptrace: wrote {len(written)} tables to {args.to}", markup=False)
    return exit_code(ds)


def exit_code(ds: Dataset) -> int:
    """0 all parsed, 1 something skipped, 3 nothing parsed at all."""
    return model.exit_code(ds)


def _load_with_progress(paths: list[str], fmt: str, err: Console) -> Dataset:
    from .sources import expand

    sources, _ = expand(paths)
    total = sum(s.size() for s in sources)
    if total < PROGRESS_BYTES or not err.is_terminal:
        return api.load(paths, fmt)
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/"
               "{task.total} files"), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("parsing", total=len(sources))

        def step(src: object, i: int, n: int) -> None:
            progress.update(task, completed=i, description=f"parsing {getattr(src, 'name', '')}")

        return api.load(paths, fmt, progress=step)


def _schema(console: Console) -> int:
    console.print(schema.markdown(), markup=False)
    return EXIT_OK


def _formats(console: Console) -> int:
    for p in registry.parsers().values():
        console.print(f"[bold]{p.name}[/bold]  tables: {', '.join(p.tables)}\n    "
                      f"{p.description}", markup=True)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
