"""The at-most-once guard on the cluster: a marker in the scheduler per idempotency key.

A call of an at-most-once tool (``"x-obelisk-at-most-once": true``) carries its
idempotency key to the worker, which claims the key in the scheduler before the activity
starts. Dask reruns the task of a worker that died; the rerun finds the key claimed and
does not run the activity: the call ends ``Interrupted``, as a durable run's resume ends an
at-most-once call that was running when the run stopped.

Why a marker in the scheduler, claimed through ``run_on_scheduler``: the scheduler is one
event loop, so :func:`claim` (a test-and-set on a set it holds) is atomic, and it outlives
every worker. A distributed ``Lock`` would not do: its lease expires when the worker
holding it dies, and a rerun could then take it. A ``Variable`` has no test-and-set. The
markers stay as long as the scheduler runs (a short string each): a worker declared dead
that still runs (cut off from the scheduler) may claim late, and must still find its key.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MARKERS", "claim", "claimed"]

#: The name of the markers' set among the scheduler's extensions.
MARKERS = "obelisk-at-most-once"


def claim(key: str, dask_scheduler: Any = None) -> bool:
    """Run in the scheduler: claim ``key``; True the first time, False ever after."""
    markers: set[str] = dask_scheduler.extensions.setdefault(MARKERS, set())
    if key in markers:
        return False
    markers.add(key)
    return True


def claimed(key: str) -> bool:
    """Run in a worker's task: claim ``key`` in the scheduler (see :func:`claim`)."""
    from distributed import get_client  # the worker's own client, made once per worker

    return bool(get_client().run_on_scheduler(claim, key))  # type: ignore[no-untyped-call]
