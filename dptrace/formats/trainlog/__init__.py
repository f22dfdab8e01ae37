"""The training-log format's spec: its name, tables and sniffing rule, without the reader.

This package's ``__init__`` imports nothing heavy (no pandas, no reader), so that detection
still works, and the inputs of this format get one clear problem each, when the reader
(:mod:`.read`) cannot be imported (see :mod:`dptrace.registry`).
"""

from __future__ import annotations

import re

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

try:  # RE2 finds any of the keywords in one linear pass; stdlib re tries each at every byte
    import re2 as _re_engine
except ImportError:  # pragma: no cover - platforms without google-re2 wheels
    _re_engine = re

#: what the scanner looks for (regex sources; mostly literals); every recogniser of
#: :mod:`.rules` needs one of them in its line
KEYWORDS: tuple[bytes, ...] = (
    b"_per_s",        # e2e samples_per_sec, train_samples_per_second
    b"PerSec",        # DeepSpeed SamplesPerSec
    b"/sec",          # img/sec, images/sec, samples/second, examples/second
    b"/s]", b"/s,",   # tqdm rates ('7.1it/s]', '7.1it/s, loss=..]')
    b"s/it",          # tqdm slow rates
    b"s/s\\b",        # '123 tokens/s' (a regex: not 'site-packages/setuptools')
    b"per iteration",  # Megatron
    b"oss:", b"oss=", b"oss':",  # loss lines
    b"[0-9]it/s(?:\\s|$)",      # Lightning's RichProgressBar ('52.68it/s v_num: 1')
    b"ms, mfu ", b"step_avg:",  # nanoGPT, modded-nanogpt step times
    # run headers and world sizes
    b"Running (?:training|benchmark|on [0-9]+ tasks)",
    b"Number of [CG]PUs:",      # Horovod synthetic benchmarks
    b"(?:WORLD_SIZE|world_size|SLURM_NTASKS|SLURM_NPROCS)=|[Ww]orld size:|Num processes",
    b"Instantaneous batch size|Total train batch size|Gradient Accumulation steps",  # HF
    # 'I am worker 3 of 8', 'MEMBER: 15/16', torch's 'store-based barrier ... with 16 nodes'
    b"worker [0-9]+ of [0-9]|MEMBER: [0-9]|store-based barrier",
    # torchrun's agent ('global_world_sizes=[4, 4]') and launch lines ('--nproc_per_node 4')
    b"global_world_sizes=\\[|--nproc[_-]per[_-]node",
    b"  tps: [0-9]",             # torchtitan's step line (tokens per second per device)
)
SCAN = _re_engine.compile(b"|".join(KEYWORDS))
RE_ENGINE = _re_engine
_NAME_HINT = lazy_pattern(r"(slurm-\d+.*\.(out|err)|\.log|\.out|\.err|std(out|err))(\.|$)", re.I)


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
    engines=("fast", "general"),
    splits=True,
    markers=KEYWORDS,
    reads="training logs (slurm-*.out, rank logs) into ``throughput`` and ``train_metrics``",
)

#: the tables this format's report parts read (dptrace.formats.REPORT_READS): its own, and
#: MLPerf logs' rows, whose figures join the job figures (analyses, job.py)
REPORT_READS = ("throughput", "train_metrics", "mllog")
#: its findings module for any Dataset (dptrace.formats.REPORT_ALWAYS): the rule over every
#: format's straggler findings (cross_source_straggler) is declared there
REPORT_ALWAYS = ("findings",)
