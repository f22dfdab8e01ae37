"""Start-up of the light commands (``dptrace --help``, ``formats``, ``schema``) against
``python -c "import pandas, pyarrow, rich"``, in one run.

    python benchmarks/bench_commands.py [--repeat 5]

Each command runs ``--repeat`` times in a fresh interpreter (``python -m dptrace.cli ...``,
output to /dev/null), interleaved round by round with the reference and with ``python -c
pass``, so they see the same machine load; the best wall time of each is kept. Also lists
which of pandas, numpy, pyarrow and rich each command imported (``-X importtime``).
Target (issue 32): these commands import no pandas, so they cost a fraction of the
reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "pyarrow", "rich")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import pandas, pyarrow, rich": [sys.executable, "-c", "import pandas, pyarrow, rich"],
    "dptrace --help": [sys.executable, "-m", "dptrace.cli", "--help"],
    "dptrace formats": [sys.executable, "-m", "dptrace.cli", "formats"],
    "dptrace schema": [sys.executable, "-m", "dptrace.cli", "schema"],
}
REFERENCE = "import pandas, pyarrow, rich"
#: children write and read bytecode, as an installed package has it (PYTHONDONTWRITEBYTECODE
#: in the caller's environment would compile every changed module in every run)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   cwd=ROOT, env=ENV)
    return time.perf_counter() - t


def imported(cmd: list[str]) -> list[str]:
    """The heavy top-level modules ``cmd`` imports (its ``-X importtime`` lines)."""
    err = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, check=True, cwd=ROOT,
                         env=ENV).stderr
    names = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if "|" in line}
    return [m for m in HEAVY if m in names]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for _ in range(a.repeat):
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    best = {k: min(v) for k, v in times.items()}
    res = {name: {"best_s": round(best[name], 4),
                  "x_reference": round(best[name] / best[REFERENCE], 3),
                  "imports": imported(cmd)}
           for name, cmd in COMMANDS.items()}
    print(json.dumps(res, indent=2))
    for name, r in res.items():
        print(f"{name:>30}: {r['best_s']:.3f} s = {r['x_reference']:.2f}x the reference; "
              f"imports {', '.join(r['imports']) or 'none of ' + '/'.join(HEAVY)}")


if __name__ == "__main__":
    main()
