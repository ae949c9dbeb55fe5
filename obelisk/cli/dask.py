"""``--interpreter dask`` on ``run``, ``resume`` and ``agent``: where the cluster is.

    obelisk run FILE --activities pkg.mod:NAME --interpreter dask --dask-scheduler tcp://HOST:PORT
    obelisk run FILE --activities pkg.mod:NAME --interpreter dask --dask-workers 4

``--dask-scheduler`` connects to a running cluster; ``--dask-workers N`` starts a local one
of N worker processes on 127.0.0.1 for the run and stops it after. ``--dask-executor``
says where the calls of a tool without ``"x-obelisk-executor"`` run. Workers import the
activities by the path ``--activities`` gives (its module must be importable there).
Dask is imported only when ``--interpreter dask`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from obelisk.cli.common import load_activities
from obelisk.jsonio import InputError

if TYPE_CHECKING:
    from distributed import Client

    from obelisk import (
        LLM,
        ActivityPath,
        AgentResult,
        CompiledPlan,
        Context,
        Journal,
        RunResult,
    )

T = TypeVar("T")


def add_dask_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dask-scheduler``, ``--dask-workers``, ``--dask-executor``."""
    group = parser.add_argument_group("Dask (--interpreter dask)")
    group.add_argument("--dask-scheduler", metavar="tcp://HOST:PORT",
                       help="run the calls on the cluster of this Dask scheduler")
    group.add_argument("--dask-workers", type=int, metavar="N",
                       help="start a local cluster of N worker processes for the run")
    group.add_argument("--dask-executor", choices=["dask", "local"], default="dask",
                       help="where the calls of a tool without \"x-obelisk-executor\" run "
                            "(default: dask)")


def check_dask_options(args: argparse.Namespace) -> None:
    """One cluster for ``--interpreter dask``, and none without it (InputError, exit 2)."""
    given = [flag for flag, value in (("--dask-scheduler", args.dask_scheduler),
                                      ("--dask-workers", args.dask_workers)) if value is not None]
    if args.interpreter != "dask":
        if given:
            raise InputError(f"{given[0]} needs --interpreter dask")
        return
    if len(given) != 1:
        raise InputError("--interpreter dask needs a cluster: --dask-scheduler tcp://HOST:PORT "
                         "(a running one) or --dask-workers N (a local one for the run)")
    if args.dask_workers is not None and args.dask_workers < 1:
        raise InputError("--dask-workers must be at least 1")


def activity_paths(spec: str | None) -> dict[str, ActivityPath]:
    """Where workers import each activity of ``--activities package.module:NAME``: the
    entry of that mapping, by name (MCP tools' activities have none: they run here)."""
    from obelisk import ActivityPath

    if spec is None:
        return {}
    module, _, attribute = spec.partition(":")
    return {name: ActivityPath(module, attribute, name) for name in load_activities(spec)}


def run_plan(args: argparse.Namespace, plan: CompiledPlan, activities: Mapping[str, Any],
             approve: Any, observe: Callable[[Any], None], journal: Journal | None = None,
             run_id: str | None = None, on_event: Any = None) -> RunResult:
    """``obelisk run --interpreter dask``: the plan run (and recorded, with a journal) on
    the cluster the options name."""
    from obelisk import run_dask

    paths = activity_paths(args.activities)
    return on_dask(args, lambda client: run_dask(
        plan, client=client, activities=activities, paths=paths, executor=args.dask_executor,
        approve=approve, max_concurrency=args.max_concurrency, timeout=args.timeout,
        observer=observe, journal=journal, run_id=run_id, on_event=on_event))


def resume_plan(args: argparse.Namespace, journal: Journal, run_id: str,
                activities: Mapping[str, Any], approve: Any,
                observe: Callable[[Any], None], on_event: Any = None) -> RunResult:
    """``obelisk resume --interpreter dask``: the recorded run continued on the cluster."""
    from obelisk import resume_dask

    paths = activity_paths(args.activities)
    return on_dask(args, lambda client: resume_dask(
        journal, run_id, client=client, activities=activities, paths=paths,
        executor=args.dask_executor, approve=approve, max_concurrency=args.max_concurrency,
        timeout=args.timeout, observer=observe, take_over=args.take_over, on_event=on_event))


def run_agent(args: argparse.Namespace, context: Context, llm: LLM,
              options: Mapping[str, Any]) -> AgentResult:
    """``obelisk agent --interpreter dask``: the agent run with its activities on the
    cluster (latent calls, delegates and MCP tools stay here)."""
    from obelisk import DaskInterpreter
    from obelisk import run_agent as run

    paths = activity_paths(args.activities)
    return on_dask(args, lambda client: run(
        context, llm, interpreter=DaskInterpreter(client, args.dask_executor, paths),
        **options))


def on_dask(args: argparse.Namespace, make: Callable[[Client], Awaitable[T]]) -> T:
    """``make(client)`` run on a new event loop, with a client of the cluster the options
    name (closed, and a local cluster stopped, after it); a cluster that cannot be reached
    or started is bad input (exit 2). Ctrl-C cancels the run, and so its futures, then
    raises ``KeyboardInterrupt`` (exit 130). Dask's own log says only what is critical
    meanwhile: what went wrong is the run's to say (a lost scheduler is a call's failure,
    not a traceback)."""
    from obelisk.dask.cluster import ClusterError, dask_client

    async def run() -> T:
        async with dask_client(args.dask_scheduler, args.dask_workers) as client:
            done = await make(client)
        # asyncio.run cancels this task on Ctrl-C; the run was cancelled and returned.
        cancelling = getattr(asyncio.current_task(), "cancelling", None)  # Python 3.11+
        if cancelling is not None and cancelling():
            raise KeyboardInterrupt
        return done

    # Dask's loggers (distributed.client and others have levels of their own) write
    # through the handlers of its root logger, "distributed": those say only what is
    # critical, until the run ends.
    handlers = logging.getLogger("distributed").handlers
    levels = [handler.level for handler in handlers]
    for handler in handlers:
        handler.setLevel(logging.CRITICAL)
    try:
        return asyncio.run(run())
    except ClusterError as exc:
        raise InputError(str(exc)) from None
    finally:
        for handler, level in zip(handlers, levels, strict=True):
            handler.setLevel(level)
