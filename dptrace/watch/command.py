"""``dptrace watch PATH...``: the command (wired into :mod:`dptrace.cli` by ``add_parser``).

Imports neither pandas nor rich at module level (``dptrace --help`` stays light)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

#: the dashboard is rewritten at most this often (s)
HTML_EVERY = 30.0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``watch`` subcommand on ``sub`` (an argparse subparsers action)."""
    p = sub.add_parser(
        "watch", help="follow a running job's outputs: the report so far, redrawn",
        description="Follow a running job's outputs (files, folders, globs) and show what "
                    "the report would say now: the job figure after warm-up, the per-instance "
                    "table with the straggler, the findings as they appear (and printers that "
                    "stopped, throughput drops). Ends when every input stopped growing for "
                    "--idle-exit seconds, the Slurm job left the queue, or on Ctrl-C, with "
                    "the ordinary report of what was read.")
    add_arguments(p)
    p.set_defaults(func=run)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or globs to follow")
    p.add_argument("--interval", type=float, default=5.0, metavar="S",
                   help="seconds between refreshes (default 5)")
    p.add_argument("--idle-exit", type=float, default=None, metavar="S",
                   help="exit when every input stopped growing for S seconds")
    p.add_argument("--baseline", metavar="RUN",
                   help="a saved dataset directory or inputs of an earlier run: a throughput "
                        "below it is a finding")
    p.add_argument("--html", metavar="FILE",
                   help="rewrite the HTML dashboard (atomically) at most every 30 s")
    p.add_argument("--jsonl", metavar="FILE|-", help="one JSON object per refresh")
    p.add_argument("--job-id", metavar="ID",
                   help="the Slurm job: the watch ends when it leaves the queue (default: "
                        "the id in slurm-ID.out names)")
    p.add_argument("--warmup", type=float, default=0.1,
                   help="share of each instance's steps dropped as warm-up (default 0.1)")
    p.add_argument("--no-report", action="store_true",
                   help="do not print the final report at the end")


def build_parser() -> argparse.ArgumentParser:
    """A parser of ``watch`` alone (``python -m dptrace.watch.command``, tests)."""
    p = argparse.ArgumentParser(prog="dptrace watch")
    add_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the watch; the exit code (:mod:`dptrace.exitcodes`)."""
    from ..errors import DptraceError
    from ..exitcodes import EXIT_USAGE
    from .run import Watch

    if args.interval <= 0:
        print("dptrace watch: --interval must be positive", file=sys.stderr)
        return EXIT_USAGE
    try:
        w = Watch(args.paths, interval=args.interval, idle_exit=args.idle_exit,
                  baseline=args.baseline, warmup=args.warmup, job_id=args.job_id,
                  datasets=HTML_EVERY if args.html else None)
    except (DptraceError, OSError) as exc:
        print(f"dptrace watch: {exc}", file=sys.stderr)
        return EXIT_USAGE
    faces = Faces(args)
    final = None
    try:
        for snap in w.snapshots():
            faces.show(snap)
            final = snap if snap.final else None
            del snap   # not held while the next one is made
    except KeyboardInterrupt:
        faces.note("interrupted: reading what was written")
    finally:
        faces.stop()
    if final is None:
        final = w.final()
        faces.write_files(final, force=True)
    elif w.ended:
        faces.note(f"ended: {w.ended}")
    return faces.end(final, args)


class Faces:
    """Where snapshots go: the live view (a TTY) or a line each, ``--jsonl``, ``--html``."""

    def __init__(self, args: argparse.Namespace) -> None:
        from rich.console import Console

        self.console = Console()
        self.err = Console(stderr=True)
        self.args = args
        self.tty = self.console.is_terminal and args.jsonl != "-"
        self.live: Any = None
        self.jsonl: Any = None
        if args.jsonl == "-":
            self.jsonl = sys.stdout
        elif args.jsonl:
            self.jsonl = open(args.jsonl, "a", encoding="utf-8")  # noqa: SIM115
        self.html_at = -1e18

    def show(self, snap: Any) -> None:
        self.write_files(snap, force=snap.final)
        if self.args.jsonl == "-":
            return
        if self.tty:
            from rich.live import Live

            from .view import render

            if self.live is None:
                self.live = Live(render(snap), console=self.console, auto_refresh=False)
                self.live.start()
            self.live.update(render(snap), refresh=True)
        else:
            from .view import line

            self.console.print(line(snap), markup=False, highlight=False, soft_wrap=True)

    def write_files(self, snap: Any, force: bool = False) -> None:
        if self.jsonl is not None:
            self.jsonl.write(json.dumps(snap.to_json(), default=str) + "\n")
            self.jsonl.flush()
        now = time.monotonic()
        # (the dashboard is the report of a snapshot's whole Dataset: built every
        # HTML_EVERY s when --html is given, and at the end)
        if self.args.html and snap.dataset is not None and \
                (force or now - self.html_at >= HTML_EVERY):
            self.html_at = now
            write_html(snap, self.args.html, self.args.warmup)

    def note(self, text: str) -> None:
        self.err.print(f"dptrace watch: {text}", markup=False)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def end(self, final: Any, args: argparse.Namespace) -> int:
        from .. import api
        from ..reports.model import exit_code

        if self.jsonl is not None and self.jsonl is not sys.stdout:
            self.jsonl.close()
        ds = final.dataset
        if not args.no_report and args.jsonl != "-":
            from ..reports import terminal

            terminal.render(api.report(ds, warmup=args.warmup), self.console)
        return int(exit_code(ds))


def write_html(snap: Any, path: str, warmup: float) -> None:
    """The ordinary dashboard of the snapshot's Dataset, written then renamed into place (a
    browser never reads half a file)."""
    from .. import api

    html = api.report(snap.dataset, warmup=warmup).to_html()
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(html)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
