"""Companion formats whose lines come at the end of long jobs are read wherever they are
(issue 30): a DeepSpeed comms summary, NCCL's watchdog timeouts and MLPerf's :::MLLOG records
printed after more than 16 MB of training output. Each file: a real log's lines, with 17 MB
of its own training lines (from the same log) put before the part that holds the markers."""

from __future__ import annotations

from pathlib import Path

import pytest

import dptrace
from dptrace import registry

FIX = Path(__file__).parent / "fixtures"
#: (real log, the 1-based line where the markers' part starts, the table, its rows alone)
CASES = [
    (FIX / "trainlog" / "mlprof_deepspeed_comms_logger_polaris.log", 455, "ds_comms"),
    (FIX / "nccl" / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log", 1, "nccl_events"),
    (FIX / "mllog" / "mlperf1.0_nv_bert_pytorch_n1_8gpu.txt", 1, "mllog"),
]
FILLER = FIX / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log"   # real Megatron iteration lines


def _padded(tmp_path: Path, log: Path, at: int) -> Path:
    lines = log.read_bytes().splitlines(keepends=True)
    filler = [ln for ln in FILLER.read_bytes().splitlines(keepends=True)
              if b"elapsed time per iteration" in ln]
    pad, size = [], 0
    while size <= registry.DEEP_BYTES + (1 << 20):
        pad.extend(filler)
        size += sum(map(len, filler))
    out = tmp_path / log.name
    out.write_bytes(b"".join(lines[:at - 1] + pad + lines[at - 1:]))
    assert out.stat().st_size > registry.DEEP_BYTES
    return out


@pytest.mark.parametrize(("log", "at", "table"), CASES, ids=[c[2] for c in CASES])
def test_markers_past_16_mb_are_read(tmp_path, log, at, table):
    alone = dptrace.load(log)[table]
    assert len(alone)
    padded = _padded(tmp_path, log, at)
    ds = dptrace.load(padded)
    assert len(ds[table]) == len(alone), table
    fmt = str(ds.sources["format"].iloc[0])
    assert {"ds_comms": "dscomms", "nccl_events": "nccl", "mllog": "mllog"}[table] in fmt
