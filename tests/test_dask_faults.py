"""Workers lost under the Dask interpreter, on a real LocalCluster whose scheduler lets a
task kill one worker and fails it on the second (``allowed-failures`` 1).

The worker running a call is found through the scheduler (``client.processing``) and
SIGKILLed: an ordinary call runs again elsewhere with the same idempotency key and the run
ends with run_sync's context; an at-most-once call is not run again and ends
``Interrupted``; a call that kills every worker it runs on fails with ``KilledWorker``,
and the run goes on down its error branch. The activities count their executions in a
file.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
from typing import Any

import dask_activities as acts
import pytest
from daskcluster import local_cluster, on_cluster

from obelisk import run_sync
from obelisk.interpreters.dryrun import DRY_RUN_DATE

pytestmark = pytest.mark.slow  # real worker processes killed and started again

CHARGE = {"type": "object", "x-obelisk-at-most-once": True,
          "properties": {"_tool": {"const": "charge"}}}


@pytest.fixture(scope="module")
def cluster() -> Any:
    yield from local_cluster(**{"distributed.scheduler.allowed-failures": 1})


def lines(path: pathlib.Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


async def kill_the_worker_running(client: Any, prefix: str, log: pathlib.Path) -> str:
    """SIGKILL the worker that the scheduler says is processing the task whose key starts
    with ``prefix`` (once its activity has started); the task's key."""
    while True:
        processing = await client.processing()
        running = [(worker, key) for worker, keys in processing.items() for key in keys
                   if str(key).startswith(prefix)]
        if running and lines(log):
            break
        await asyncio.sleep(0.01)
    worker, key = running[0]
    pids = await client.run(os.getpid, workers=[worker])
    os.kill(pids[worker], signal.SIGKILL)
    return str(key)


def context_of(tmp: pathlib.Path) -> list[Any]:
    return [{"type": "input", "input": {"log": str(tmp / "log"), "go": str(tmp / "go")}}]


def test_a_call_whose_worker_is_killed_runs_again_elsewhere(cluster: Any,
                                                           tmp_path: pathlib.Path) -> None:
    from obelisk import run_dask

    log, go = tmp_path / "log", tmp_path / "go"
    plan = [{"_tool": "waits", "i": 1, "log": "†input.log", "go": "†input.go",
             "_outputPath": "†s.w"},
            {"_tool": "step", "i": 2, "after": "†s.w", "_outputPath": "†s.after"}]

    async def killed(client: Any) -> Any:
        run = asyncio.create_task(run_dask(plan, context_of(tmp_path), client=client,
                                           activities=acts.ACTIVITIES,
                                           clock=lambda: DRY_RUN_DATE))
        await kill_the_worker_running(client, "waits-", log)
        while len(lines(log)) < 2:  # the task started again, on the other worker
            await asyncio.sleep(0.01)
        go.touch()
        return await run

    result = on_cluster(cluster, killed)
    first, second = lines(log)
    assert first[1] == second[1] and first[2] != second[2]  # one key, two processes
    expected = run_sync(plan, context_of(tmp_path), activities=acts.ACTIVITIES,
                        clock=lambda: DRY_RUN_DATE)
    assert result.status == "completed"
    assert result.context.to_json() == expected.context.to_json()


def markers(dask_scheduler: Any = None) -> list[str]:
    """Run in the scheduler: the at-most-once keys claimed."""
    from obelisk.dask.guard import MARKERS

    return sorted(dask_scheduler.extensions.get(MARKERS, ()))


def test_an_at_most_once_call_whose_worker_is_killed_is_interrupted(
        cluster: Any, tmp_path: pathlib.Path) -> None:
    from obelisk import run_dask

    log = tmp_path / "log"
    plan = [{"_tool": "charge", "i": 1, "log": "†input.log", "go": "†input.go",
             "_outputPath": "†s.c || †e.c"}]

    async def killed(client: Any) -> tuple[Any, list[str]]:
        run = asyncio.create_task(run_dask(plan, context_of(tmp_path), client=client,
                                           tools=[CHARGE], activities=acts.ACTIVITIES))
        await kill_the_worker_running(client, "charge-", log)
        result = await run
        return result, await client.run_on_scheduler(markers)

    result, claimed = on_cluster(cluster, killed)
    (start,) = lines(log)  # never run twice
    error = result.context.value("e", ("c",))
    assert error["type"] == "Interrupted"
    assert error["data"] == {"idempotencyKey": start[1]}
    assert "a Dask worker died while this call ran" in error["message"]
    assert start[1] in claimed
    (tmp_path / "go").touch()


def test_a_call_that_kills_every_worker_fails_down_its_error_branch(
        cluster: Any, tmp_path: pathlib.Path) -> None:
    from obelisk import run_dask

    log = tmp_path / "log"
    plan = [{"_tool": "dies", "log": "†input.log", "_outputPath": "†s.d || †e.d"},
            {"_tool": "step", "i": 3, "gate": "†e.d.type", "_outputPath": "†s.after"}]
    result = on_cluster(cluster, lambda client: run_dask(
        plan, context_of(tmp_path), client=client, activities=acts.ACTIVITIES))
    assert len(lines(log)) == 2  # one worker died, then the other: allowed-failures 1
    error = result.context.value("e", ("d",))
    assert error["type"] == "KilledWorker"
    assert "all those workers died while running it" in error["message"]
    assert "distributed.scheduler.allowed-failures" in error["message"]
    assert result.status == "completed" and result.context.value("s", ("after",)) == {"n": 3}
