"""A load runs on Arrow's system memory pool (``loader._system_arrow_pool``) and restores the
default pool after; Arrow buffers made during the load and freed after it go back to the
pool they came from (run in a child process: a buffer freed into the wrong pool crashes)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa

from dptrace import loader

FIXTURES = Path(__file__).parent / "fixtures"

CHILD = textwrap.dedent("""
    import gc, sys
    import pyarrow as pa
    import dptrace
    from dptrace import loader

    default = pa.default_memory_pool().backend_name
    system = pa.system_memory_pool()
    assert default != system.backend_name, default   # else the test proves nothing
    with loader._system_arrow_pool():
        assert pa.default_memory_pool().backend_name == system.backend_name
        made = pa.array([f"rank {i}" for i in range(100_000)])   # made on the system pool
    assert pa.default_memory_pool().backend_name == default
    during = system.bytes_allocated()
    assert during >= made.nbytes, (during, made.nbytes)
    ds = dptrace.load(sys.argv[1])                     # a whole load, kept past it
    assert pa.default_memory_pool().backend_name == default
    assert sum(len(df) for df in ds.values()) > 0
    after_load = system.bytes_allocated()
    other = pa.array(range(100_000))                   # on the default pool again
    del made, ds
    gc.collect()
    # what was freed went back to the system pool it came from
    assert system.bytes_allocated() < during, (system.bytes_allocated(), during)
    assert system.bytes_allocated() <= after_load
    del other
    gc.collect()
    print("ok", default)
""")


def test_pool_restored_and_buffers_freed_into_their_pool() -> None:
    if pa.default_memory_pool().backend_name == pa.system_memory_pool().backend_name:
        return   # a pyarrow built without jemalloc/mimalloc: the context does nothing
    out = subprocess.run([sys.executable, "-c", CHILD,
                          str(FIXTURES / "mpitrace" / "ibm_mpitrace_callstack_4rank")],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_pool_restored_when_the_load_raises() -> None:
    before = pa.default_memory_pool().backend_name
    try:
        with loader._system_arrow_pool():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert pa.default_memory_pool().backend_name == before
