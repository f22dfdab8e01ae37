"""The registry finds the format packages of dptrace/formats with pkgutil, knows a format by
its light spec, and imports its reader only when an input of it is read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dptrace
from dptrace import formats, registry, schema

ROOT = Path(__file__).resolve().parents[1]


def test_every_format_package_is_registered_under_its_name() -> None:
    assert formats.names() == ["dscomms", "horovod", "mllog", "mpip", "mpitrace", "nccl",
                               "nccltests", "sntilestat", "torchtrace", "trainlog"]
    assert list(registry.parsers()) == formats.names()
    for name, parser in registry.parsers().items():
        assert parser.spec.name == name
        assert set(parser.tables) <= set(schema.TABLES)


def test_detection_imports_no_reader_and_no_pandas() -> None:
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from dptrace import registry
        from dptrace.sources import Source
        p = Path("examples/data/bigscience_hf_ds_gpt2_n16_bs4.out")
        assert registry.detect(Source(str(p), p)).name == "trainlog"
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pandas", "numpy",
                       "pyarrow", "msgspec") or m.endswith(".read"))
        print(heavy)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_schema_order_is_the_listing_order() -> None:
    assert list(schema.TABLES) == [
        "throughput", "train_metrics", "tiles", "sources", "problems", "runs",
        "mpi_routines", "mpi_messages", "mpi_ranks", "mpi_jobs", "mpi_comm_sizes",
        "mpi_call_stacks", "mpi_histogram", "mpi_callsites",
        "hvd_activities", "hvd_tensors", "hvd_ready", "hvd_cycles", "hvd_runs",
        "nccl_tests", "nccl_tests_summary", "nccl_setup", "nccl_events", "nccl_env",
        "ds_comms", "mllog", "torch_events", "torch_traces", "findings",
        "fleet", "fleet_findings", "fleet_ranks", "job_figures"]


NEW_FORMAT = {
    "__init__.py": '''
        from dptrace.registry import Spec

        def sniff(source, head):
            return 0.99 if head.startswith(b"ZZFAKE") else 0.0

        SPEC = Spec(name="zzfake", description="a format made in a test",
                    tables=("zz_rows",), sniff=sniff)
    ''',
    "tables.py": '''
        from dptrace.schema import SOURCE, Column, Table, register_table

        ZZ = register_table(Table("zz_rows", "test rows",
                                  (SOURCE, Column("n", "Int64", "a number"))), place=90)
    ''',
    "read.py": '''
        from dptrace import schema
        from dptrace.registry import ParseResult
        from .tables import ZZ

        def parse(source):
            n = len(source.read_all([]).splitlines())
            return ParseResult({"zz_rows": schema.conform({"source": [source.name],
                                                           "n": [n]}, ZZ)})
    ''',
}


def test_a_new_format_is_one_new_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "zzfake"
    pkg.mkdir()
    for name, text in NEW_FORMAT.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.setattr(formats, "__path__", [*formats.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_PARSERS", {})
    monkeypatch.setattr(registry, "_LOADED", False)
    monkeypatch.setattr(schema, "_FORMATS_LOADED", False)
    for mod in [m for m in sys.modules if m.startswith("dptrace.formats.zzfake")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setattr(registry, "_READERS", dict(registry._READERS))
    try:
        assert "zzfake" in registry.parsers()
        assert "dptrace.formats.zzfake.read" not in sys.modules   # not until it reads
        assert "zz_rows" in schema.TABLES
        data = tmp_path / "input.zz"
        data.write_bytes(b"ZZFAKE\n1\n2\n")
        ds = dptrace.load(data)
        assert ds["zz_rows"]["n"].tolist() == [3]
        assert ds.sources["format"].tolist() == ["zzfake"]
        assert "dptrace.formats.zzfake.read" in sys.modules
        assert dptrace.api.read_function("zzfake")(data)["zz_rows"]["n"].tolist() == [3]
    finally:
        schema._TABLES.pop("zz_rows", None)
        schema._PLACES.pop("zz_rows", None)
