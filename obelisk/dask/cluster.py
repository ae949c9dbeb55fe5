"""The client a command-line run uses: connected to a running scheduler, or to a
``LocalCluster`` started for the run (``--dask-workers N``) and closed after it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from distributed import Client, LocalCluster

from obelisk.core.errors import ObeliskError

__all__ = ["ClusterError", "dask_client"]


class ClusterError(ObeliskError):
    """The Dask cluster could not be reached or started: ``reason`` says why and what to
    do."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@contextlib.asynccontextmanager
async def dask_client(scheduler: str | None = None,
                      workers: int | None = None) -> AsyncIterator[Client]:
    """An asynchronous client of the scheduler at ``scheduler`` (``tcp://HOST:PORT``), or
    of a new ``LocalCluster`` of ``workers`` processes on 127.0.0.1 (one thread each, no
    dashboard), closed on the way out. Raises :class:`ClusterError` when the scheduler
    cannot be reached (within Dask's ``distributed.comm.timeouts.connect``) or the cluster
    does not start."""
    if (scheduler is None) == (workers is None):
        raise ValueError("give a scheduler's address or a number of workers, not both")
    async with contextlib.AsyncExitStack() as stack:
        if workers is not None:
            if workers < 1:
                raise ClusterError("--dask-workers must be at least 1")
            try:
                cluster = await stack.enter_async_context(LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=workers, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None, asynchronous=True))
            except Exception as exc:  # noqa: BLE001 - said below, without a traceback
                raise ClusterError(f"a local Dask cluster of {workers} workers did not "
                                   f"start: {type(exc).__name__}: {exc}") from None
            address = cluster.scheduler_address
        else:
            address = scheduler
        try:
            client = await stack.enter_async_context(
                Client(address, asynchronous=True))  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 - refused, timed out, a bad address...
            raise ClusterError(f"cannot reach the Dask scheduler at {address} "
                               f"({type(exc).__name__}: {exc}): start it with `dask scheduler`, "
                               "or check the address") from None
        yield client
