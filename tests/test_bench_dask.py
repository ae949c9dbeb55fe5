"""bench/dask_interpreter.py: its workloads give the answers they should (obelisk's runs complete
without errors, raw Dask's give every result), on a small cluster; nothing is timed."""

from __future__ import annotations

import asyncio

import pytest
from bench_scripts import load_script
from daskcluster import require_dask


@pytest.mark.slow
def test_the_benchmark_runs_its_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    require_dask()
    bench = load_script("dask_interpreter", "bench_dask_interpreter")
    asyncio.run(bench.main(calls=20, links=5, rounds=1))
    printed = capsys.readouterr().out
    assert "20 no-op calls: obelisk" in printed
    assert "20 calls of 10 ms on 2 workers" in printed and "of raw Dask's throughput" in printed
    assert "a chain of 5 calls, per hop: obelisk on the cluster" in printed
    assert '("x-obelisk-executor": "local")' in printed
