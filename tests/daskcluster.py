"""A real Dask cluster for the tests: a ``LocalCluster`` of two worker processes on
127.0.0.1, one thread each, no dashboard, with this folder on the workers' PYTHONPATH (so
they import ``dask_activities``). Not a test module.

Without Dask the tests that need it skip, unless ``OBELISK_REQUIRE_DASK`` is set (CI sets
it): then they fail.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

HERE = pathlib.Path(__file__).resolve().parent
T = TypeVar("T")


def require_dask() -> None:
    """Skip (or, under CI, fail) when Dask is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        if os.environ.get("OBELISK_REQUIRE_DASK"):
            pytest.fail("Dask is required here (OBELISK_REQUIRE_DASK is set): "
                        "pip install -e '.[dev]'")
        pytest.skip("Dask is not installed: pip install 'obelisk[dask]' to run this test")


def worker_env() -> dict[str, str]:
    """The workers' environment: this folder on their PYTHONPATH."""
    paths = [str(HERE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def local_cluster(**config: Any) -> Iterator[Any]:
    """A LocalCluster of two worker processes (``config``: Dask settings for it), closed
    after."""
    require_dask()
    import dask
    from distributed import LocalCluster

    with dask.config.set(config), LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None, env=worker_env()) as cluster:
        yield cluster


def on_cluster(cluster: Any, make: Callable[[Any], Awaitable[T]]) -> T:
    """``make(client)`` on a new event loop, with an asynchronous client of ``cluster``."""
    from distributed import Client

    async def run() -> T:
        async with Client(cluster.scheduler_address, asynchronous=True) as client:
            await client.wait_for_workers(2)
            return await make(client)

    return asyncio.run(run())
