"""The fleet's tables, registered with :mod:`dptrace.schema` as a format registers its own:
``fleet`` (one row per run), ``fleet_findings``, ``fleet_ranks`` and ``job_figures`` (the
job figures of each run, as the cache's ``derived/`` holds them). Imports no pandas."""

from __future__ import annotations

from ..schema import Column, Table, register_table

#: where the fleet tables sit in ``dptrace schema``: after every format's
PLACE = 900


def _c(name: str, dtype: str, doc: str, unit: str = "") -> Column:
    return Column(name, dtype, doc, unit)


RUN_KEY = _c("run_key", "string", "the run's key in the fleet: the cache key of its job folder "
             "(sha256 of the parser versions and its files) and the run's id, 'KEY/RUN'")
RUN = _c("run", "string", "the run's id as `dptrace report` of its job folder names it")

FLEET = register_table(Table(
    "fleet",
    "One row per run of a survey (`dptrace survey`): what the run is, its job figure, its "
    "communication share and network, its findings and stragglers, and how it was read. A "
    "job folder that could not be read is one row with its error.",
    (
        RUN_KEY, RUN,
        _c("label", "string", "the run's label"),
        _c("job_id", "string", "the job id its file names or profiles give"),
        _c("path", "string", "the job folder (as found under the root)"),
        _c("start", "datetime64[ns]", "when the run started (UTC, naive), where known"),
        _c("end", "datetime64[ns]", "when the run ended (UTC, naive), where known"),
        _c("time_from", "string", "where start and end came from: a table's timestamps, "
           "or 'file mtimes' (the oldest and newest modification time of its files)"),
        _c("world_size", "Int64", "processes in the job (the runs table)"),
        _c("world_size_from", "string", "where world_size came from"),
        _c("nodes", "Int64", "nodes of the job (the runs table)"),
        _c("launcher", "string", "srun, torchrun, mpirun, ... where known"),
        _c("formats", "string", "the formats of its inputs, comma-separated"),
        _c("statuses", "string", "its inputs by status: 'ok 4, partial 1'"),
        _c("status", "string", "ok, partial (an input or part of one was skipped), failed "
           "(no input gave data), error (the survey could not read the folder: see error), "
           "timeout"),
        _c("error", "string", "why the folder could not be read (status error or timeout)"),
        _c("metric", "string", "the job figure's metric (images_per_s, tokens_per_s, ...)"),
        _c("value", "float64", "the job figure: the job's training throughput, as the "
           "report's 'Job throughput' table gives it first"),
        _c("how", "string", "how the job figure was made (printed_global, sum_of_ranks, ...)"),
        _c("rule", "string", "the rule that made the job figure, in words"),
        _c("per_gpu", "float64", "the job figure divided by the world size (per process)"),
        _c("step_time_s", "float64", "median step time of the training series, where the "
           "log prints one", "s"),
        _c("comm_share", "float64", "mean share of the ranks' elapsed time in MPI "
           "(mpitrace/mpiP), else in collectives (PyTorch traces)", "fraction"),
        _c("nccl_network", "string", "NCCL's network: the transports/plugins it chose "
           "(Socket = the TCP fallback)"),
        _c("nccl_socket", "boolean", "NCCL fell back to sockets (TCP) on some process"),
        _c("gdr", "boolean", "GPUDirect RDMA on every process that used a network"),
        _c("findings_critical", "Int64", "findings of severity critical"),
        _c("findings_warning", "Int64", "findings of severity warning"),
        _c("findings_info", "Int64", "findings of severity info"),
        _c("top_kind", "string", "the kind of the first finding (the report's order)"),
        _c("top_finding", "string", "the first finding's message"),
        _c("straggler_ranks", "string", "ranks a straggler finding names, comma-separated"),
        _c("straggler_hosts", "string", "their hosts, where a table names them"),
        _c("parse_s", "float64", "wall time of its folder's load (shared by the folder's "
           "runs; from the cache when the tables came from it)", "s"),
        _c("analysis_s", "float64", "wall time of its folder's analysis", "s"),
        _c("cache", "string", "hit (read from the cache), analysed (tables from the cache, "
           "analysed again), parsed (read from its files), none (no cache)"),
        _c("dptrace_version", "string", "the dptrace version that parsed it"),
    ),
    key=("run_key",),
), PLACE)

FLEET_FINDINGS = register_table(Table(
    "fleet_findings",
    "Every finding of every run of a survey, one row each, with the run's key and the "
    "host of the rank it names.",
    (
        RUN_KEY, RUN,
        _c("severity", "string", "critical, warning or info"),
        _c("kind", "string", "the rule that fired (dptrace schema findings)"),
        _c("scope", "string", "job, rank, instance, tensor, tile or input"),
        _c("subject", "string", "who: 'rank 2', a job id, a file name"),
        _c("rank", "Int64", "the rank it is about, else null"),
        _c("host", "string", "that rank's host, where a table names it"),
        _c("value", "float64", "the measured value"),
        _c("threshold", "float64", "the limit it crossed"),
        _c("message", "string", "the finding's sentence"),
    ),
    key=("run_key", "kind", "subject"),
), PLACE)

FLEET_RANKS = register_table(Table(
    "fleet_ranks",
    "One row per rank of every run of a survey that names its ranks: its host, "
    "communication share and whether a straggler finding names it (group by host to see "
    "the nodes that straggle across jobs).",
    (
        RUN_KEY, RUN,
        _c("rank", "Int64", "the rank in the job's world"),
        _c("host", "string", "its host, where a table names it"),
        _c("comm_share", "float64", "its share of elapsed time in MPI (mpitrace/mpiP) or "
           "collectives (PyTorch traces)", "fraction"),
        _c("straggler", "bool", "a straggler finding of the run names this rank"),
    ),
    key=("run_key", "rank"),
), PLACE)

JOB_FIGURES = register_table(Table(
    "job_figures",
    "The job figures of each run (the report's 'Job throughput' table: per run, input and "
    "metric, the job's throughput and the rule that made it), as the fleet cache keeps them.",
    (
        RUN_KEY, RUN,
        _c("input", "string", "the log it came from (file name)"),
        _c("metric", "string", "images_per_s, tokens_per_s, samples_per_s, it_per_s, ..."),
        _c("value", "float64", "the job figure"),
        _c("how", "string", "printed_global, sum_of_ranks, ..."),
        _c("rule", "string", "the rule, in words"),
        _c("ranks", "string", "which ranks it covers ('all 4')"),
        _c("printers", "Int64", "ranks that printed it"),
        _c("world_size", "Int64", "the world size it used"),
        _c("source", "string", "the input path"),
        _c("pattern", "string", "the line pattern"),
        _c("name", "string", "the series' name as printed"),
        _c("label", "string", "the series' label"),
        _c("scope", "string", "global, rank, device, ..."),
        _c("rows", "Int64", "lines behind it"),
        _c("value_all_steps", "float64", "the figure without dropping warm-up"),
        _c("copies_agree", "boolean", "the copies of the line agree"),
        _c("check_name", "string", "the figure it was checked against"),
        _c("check_value", "float64", "that figure's value"),
        _c("check_range", "float64", "that figure's spread"),
        _c("check_agrees", "boolean", "the check agrees"),
        _c("first_lineno", "Int64", "first line behind it"),
    ),
    key=("run", "input", "metric"),
), PLACE)

#: the tables the cache's derived/ holds per batch, each with a run_key column
DERIVED = ("fleet", "fleet_findings", "fleet_ranks", "job_figures")
