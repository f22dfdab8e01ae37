"""Make docs/watch-live.svg, the README's picture of `dptrace watch`'s live view: the view
of a real job caught while it runs (the Polaris ResNet-50 DDP log of
tests/fixtures/compare_setup, NCCL on sockets, written up to its sixth throughput line), drawn by
the same code the terminal uses (dptrace.watch.view.render) into rich's SVG export.

    python scripts/watch_screenshot.py [OUT.svg]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console

import dptrace
from dptrace.watch import view

ROOT = Path(__file__).resolve().parent.parent
LOG = (ROOT / "tests" / "fixtures" / "compare_setup"
       / "polaris_resnet50_ddp_2n8gpu_socket_2025-06-26.log")


def main(out: str = str(ROOT / "docs" / "watch-live.svg")) -> int:
    out = os.path.abspath(out)
    data = LOG.read_bytes()
    cut = 0
    for _ in range(6):
        cut = data.index(b"\n", data.index(b"Throughput:", cut)) + 1
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        Path("slurm-2047361.out").write_bytes(data[:cut])
        snap = None
        for snap in dptrace.watch(["slurm-2047361.out"], interval=0.2, idle_exit=0.5):
            if not snap.final:
                break
        assert snap is not None
        with open(os.devnull, "w") as sink:
            console = Console(record=True, width=110, file=sink)
            console.print(view.render(snap))
        console.save_svg(out, title="dptrace watch slurm-2047361.out")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
