"""``"x-obelisk-executor"`` is the Dask interpreter's: the sync and asyncio interpreters
ignore it, whatever it says, so one plan file runs under all three (no Dask needed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from obelisk import run_async, run_sync
from obelisk.core.context import Context
from obelisk.interpreters.dryrun import DRY_RUN_DATE


def add(call: dict[str, Any], tool: Any, context: Context) -> Any:
    return {"n": call.get("prev", {"n": 0})["n"] + call["i"]}


PLAN = [{"_tool": "add", "i": 1, "_outputPath": "†s.a"},
        {"_tool": "add", "i": 2, "prev": "†s.a", "_outputPath": "†s.b"}]


@pytest.mark.parametrize("executor", ["dask", "local", "elsewhere", 3])
def test_sync_and_asyncio_ignore_the_executor_key(executor: Any) -> None:
    tools = [{"type": "object", "x-obelisk-executor": executor,
              "properties": {"_tool": {"const": "add"}}}]
    kw: dict[str, Any] = {"activities": {"add": add}, "clock": lambda: DRY_RUN_DATE}
    plain = run_sync(PLAN, **kw)
    synced = run_sync(PLAN, tools=tools, **kw)
    awaited = asyncio.run(run_async(PLAN, tools=tools, **kw))
    assert plain.status == synced.status == awaited.status == "completed"
    assert synced.context.to_json() == plain.context.to_json() == awaited.context.to_json()
