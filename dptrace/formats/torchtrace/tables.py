"""The PyTorch profiler trace format's tables: ``torch_events`` (one row per timed event of
a kind the analyses use) and ``torch_traces`` (one row per trace file: its rank, world size,
backend and device)."""

from __future__ import annotations

from ...schema import SOURCE, Column, Table, register_table

_c = Column

#: what an event is to the breakdown (see docs/torchtrace.md)
ROLES = ("compute", "communication", "memory", "comm_op", "step", "cpu_op", "runtime",
         "annotation")

_RANK = _c("rank", "Int64", "the process's rank: distributedInfo.rank of its trace; null when "
           "the trace has no distributedInfo")

TORCH_EVENTS = register_table(Table(
    "torch_events",
    "PyTorch profiler traces: one row per complete ('X') event on a device or CPU thread: GPU "
    "kernels, memory copies and sets, CPU ops, user annotations (ProfilerStep#N, "
    "nccl:all_reduce, gloo:all_reduce) and CUDA runtime calls. Python function events and "
    "the profiler's own spans are left out.",
    (
        SOURCE,
        _RANK,
        _c("cat", "category", "Kineto's category: kernel, gpu_memcpy, gpu_memset, cpu_op, "
           "user_annotation, gpu_user_annotation, cuda_runtime, ..."),
        _c("name", "category", "the event's name as written (kernel signatures included)"),
        _c("role", "category", "what it is to the breakdown: compute, communication (a "
           "collective's kernel, or a gloo:/nccl: backend annotation in a trace without "
           "GPU kernels), memory (copies and sets), comm_op (the CPU op that enqueued a "
           "collective: c10d::allreduce_, nccl:all_reduce on the CPU, record_param_comms), "
           "step (ProfilerStep#N), cpu_op, runtime (cuda_runtime/cuda_driver), annotation"),
        _c("device", "Int64", "GPU of a device event (its pid, Kineto's device id); null for "
           "CPU events"),
        _c("stream", "Int64", "CUDA stream of a device event; null for CPU events"),
        _c("tid", "Int64", "thread of a CPU event; null for device events"),
        _c("ts_us", "float64", "start, as the trace writes it (microseconds on the profiler's "
           "clock; fractional with nanosecond traces)", "us"),
        _c("dur_us", "float64", "duration", "us"),
        _c("collective", "category", "the collective a communication event or comm_op is: "
           "all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send_recv, "
           "reduce, barrier, ...; null otherwise"),
        _c("elements", "Int64", "elements the collective moves: args 'In msg nelems', else "
           "the product of the first 'Input Dims'; null where the trace says neither"),
        _c("dtype", "string", "element type where the trace says it (args 'dtype' or "
           "'Input type')"),
        _c("size_bytes", "Int64", "elements times the size of dtype; null when either is "
           "unknown", "B"),
        _c("step", "Int64", "N of the ProfilerStep#N the event starts in on its rank (device "
           "events by their start); null outside every step"),
    ),
    key=("source", "ts_us", "name"),
), place=55)

TORCH_TRACES = register_table(Table(
    "torch_traces",
    "PyTorch profiler traces: one row per trace file, what its metadata says.",
    (
        SOURCE,
        _RANK,
        _c("world_size", "Int64", "distributedInfo.world_size; null when absent"),
        _c("backend", "string", "distributedInfo.backend: nccl, gloo, ..."),
        _c("gpu", "string", "deviceProperties[0].name; null for a CPU-only trace"),
        _c("schema_version", "Int64", "schemaVersion"),
        _c("events", "Int64", "timed events read into torch_events"),
        _c("kernels", "Int64", "GPU kernels among them"),
        _c("first_us", "float64", "start of the first event read", "us"),
        _c("last_us", "float64", "end of the last event read", "us"),
        _c("cut", "bool", "the file ends inside traceEvents (a killed job): read up to "
           "the cut"),
    ),
    key=("source",),
), place=55)
