"""Fleets of jobs (issue 33): `dptrace survey` over many runs, its Parquet cache, and the
engines that run the per-run work (serial, a process pool, Dask: :mod:`dptrace.fleet.engines`)."""
