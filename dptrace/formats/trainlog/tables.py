"""The training-log format's tables: ``throughput`` and ``train_metrics``."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table

_c = Column

#: the text columns of these tables are categorical: a dense log's millions of rows hold a
#: handful of distinct sources, printers, names and labels (as Arrow strings per row they
#: were half of the tables' memory). Loading several files unites their categories.
_SOURCE = _c(SOURCE.name, "category", SOURCE.doc)
_INSTANCE = _c(
    "instance", "category",
    "who printed the line: the launcher prefix (srun --label 3: -> '3', mpirun --tag-output, "
    "[rank3]:, torchrun [default7]: -> 'default7'), else the rank a per-rank file's path "
    "gives (attempt_0/3/stdout.log, 1/rank.3/stdout, rank3.log); null when unknown. "
    "SambaFlow's e2e lines (one per SambaNova instance) are numbered '0', '1', ...",
)
_RANK = _c("rank", "Int64", "the process's rank in the job's world, where the launcher prefix "
           "or the file's path says it: srun --label (3: ), mpirun --tag-output "
           "([1,3]<stdout>:), [rank3]:, a bare [3] tag, a per-rank file; null otherwise "
           "(torchrun's [default3]: is a local rank)")
_REPEAT = _c("repeat", "bool",
             "the row repeats an earlier one of the same kind from the same printer at the same "
             "step (tqdm's closing redraw, Lightning's double write, a rank's line printed by "
             "several ranks without a prefix; a global figure without a step: a copy with the "
             "same value). Kept for the record; analyses skip it")
_PART = _c("part", "Int64",
           "run within the file: 0, then 1, 2, ... after each run header that follows training "
           "figures (a new '***** Running training *****', 'Number of GPUs', ...); the loader "
           "makes each part after the first a run of its own")
_PATTERN = _c("pattern", "category", "recogniser that matched (sambaflow, hf_trainer, tqdm, ...)")
_STEP = _c("step", "Int64", "step or iteration number printed on the line, if any; for a "
           "progress bar (and a series with epochs) whose count restarts every epoch, the "
           "global step: the earlier epochs' steps added")
_EPOCH = _c("epoch", "float64", "epoch printed on the line, if any")

THROUGHPUT = Table(
    "throughput",
    "One row per throughput figure printed in a training log.",
    (
        _SOURCE, _INSTANCE, _RANK, _PATTERN,
        _c("name", "category",
           "the key as printed: 'e2e samples_per_sec', 'CurrSamplesPerSec', ..."),
        _c("label", "category", "tqdm bar description, else null"),
        _c("metric", "category",
           "samples_per_s, sequences_per_s, images_per_s, tokens_per_s, iterations_per_s, "
           "steps_per_s or <unit>_per_s"),
        _c("value", "float64", "the rate, in the unit named by metric", "1/s"),
        _c("scope", "category",
           "instance (one process or SambaNova instance), device (one GPU) or global (whole job)"),
        _STEP, _EPOCH, LINENO,
        _c("phase", "category",
           "what the figure measures: train (training steps), eval (a bar labelled as "
           "evaluation, validation or testing, or an eval_/test_ figure), load (a bar of work "
           "around training, told by its description: Loading checkpoint shards, Map, "
           "Tokenizing, Generating train split, Graph compilation, ...) or download "
           "(Downloading, Fetching # files, uploads; a bar counting bytes that says nothing "
           "else). Only train is training throughput; reports show it first, load and "
           "download last"),
        _REPEAT, _PART,
    ),
    key=("source", "lineno", "name", "metric"),
)

TRAIN_METRICS = Table(
    "train_metrics",
    "Training metrics other than throughput (loss, learning rate, step time, ...).",
    (
        _SOURCE, _INSTANCE, _RANK, _PATTERN,
        _c("name", "category", "snake_case metric name with its unit: loss, lm_loss, "
           "learning_rate, grad_norm, step_time_s, world_size, ..."),
        _c("value", "float64", "the value, in the unit named by name"),
        _STEP, _EPOCH, LINENO, _REPEAT, _PART,
    ),
    key=("source", "lineno", "name"),
)

for _table in (THROUGHPUT, TRAIN_METRICS):
    register_table(_table, place=0)
