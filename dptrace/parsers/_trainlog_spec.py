"""The training-log format's spec: its name, tables and sniffing rule, without the reader.

Kept apart from :mod:`.trainlog` so that detection still works, and the inputs of this
format get one clear problem each, when the reader cannot be imported (see
:func:`dptrace.registry.parsers`).
"""

from __future__ import annotations

import re

from ..registry import Spec, looks_binary
from ..sources import Source
from . import _trainlog_rules as rules

try:  # RE2 finds any of the keywords in one linear pass; stdlib re tries each at every byte
    import re2 as _re_engine
except ImportError:  # pragma: no cover - platforms without google-re2 wheels
    _re_engine = re

KEYWORDS = rules.KEYWORDS
SCAN = _re_engine.compile(b"|".join(KEYWORDS))
RE_ENGINE = _re_engine
_NAME_HINT = re.compile(r"(slurm-\d+.*\.(out|err)|\.log|\.out|\.err|std(out|err))(\.|$)", re.I)


def sniff(source: Source, head: bytes) -> float:
    """Any text can be a training log; throughput keywords or log-like names raise the score."""
    if not head or looks_binary(head):
        return 0.0
    score = 0.6 if SCAN.search(head) else 0.1
    if _NAME_HINT.search(source.stem_name):
        score += 0.2
    return score


SPEC = Spec(
    name="trainlog",
    description="training logs: slurm-*.out, per-rank stdout/stderr (SambaFlow, HF Trainer, "
                "DeepSpeed, Megatron, Horovod benchmarks, Keras, tqdm/Lightning bars)",
    tables=("throughput", "train_metrics"),
    sniff=sniff,
    extensions=(".out", ".err", ".log", ".txt"),
    embeddable=True,
)
