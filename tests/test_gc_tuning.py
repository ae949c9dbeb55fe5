"""The garbage collector: left alone by the library, tuned only when asked
(interpreters/collector.py ``gc_tuned``).

Runs, replays and compiles never touch the collector. ``gc_tuned`` changes process-wide
state for a caller that asks (the command line, bench/), so these tests check that the
state always comes back: after nested and overlapping uses, after an exception, and never
when the collector is disabled.
"""

from __future__ import annotations

import asyncio
import gc
import pathlib
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

import obelisk
from obelisk.interpreters import collector


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    before = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*before[0])
    (gc.enable if before[1] else gc.disable)()


class Cycle:
    """A reference cycle of the host program's, noted in ``freed`` when collected."""

    def __init__(self, freed: list[int], number: int) -> None:
        self.me = self
        weakref.finalize(self, freed.append, number)


@pytest.mark.slow
def test_host_cycles_made_during_overlapping_runs_are_collected() -> None:
    # The defect of issue 27: runs froze every object the process tracked every thousand
    # calls and released them only when the last of the overlapping runs ended, so the
    # host's garbage cycles survived gc.collect() (5,000 of 5,000). Runs now leave the
    # collector alone.
    done = 0

    async def step(call: Any, tool: Any, context: Any) -> int:
        nonlocal done
        await asyncio.sleep(0)  # the host's task gets a turn at every call
        done += 1
        return 1

    plan = obelisk.compile_plan([{"_tool": "s", "x": f"†state.s{i}", "_outputPath":
                                  f"†state.s{i + 1}"} for i in range(2_000)],
                                context=[{"type": "state", "s0": 0}])  # a chain
    freed: list[int] = []
    seen: list[int] = []

    async def host() -> None:  # the service's own work, while the runs go on
        for number in range(5_000):
            Cycle(freed, number)  # garbage at once: only the collector can free it
        while done < 2_500:  # past two thousand completed calls
            await asyncio.sleep(0)
        gc.collect()
        seen.extend((len(freed), done))

    async def overlapping() -> None:
        await asyncio.gather(obelisk.run_async(plan, activities={"s": step}),
                             obelisk.run_async(plan, activities={"s": step}), host())

    asyncio.run(overlapping())
    assert seen[0] == 5_000 and seen[1] < 4_000  # every cycle, while the runs went on
    assert gc.get_freeze_count() == 0


def test_runs_replays_and_compiles_leave_the_collector_as_they_found_it() -> None:
    gc.set_threshold(1234, 11, 12)
    calls = [{"_tool": "t", "_outputPath": "†state.a"}]
    seen: list[tuple[tuple[int, int, int], int]] = []

    def t(call: Any, tool: Any, context: Any) -> int:
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        return 1

    async def at(call: Any, tool: Any, context: Any) -> int:
        return t(call, tool, context)

    events: list[Any] = []
    plan = obelisk.compile_plan(calls)
    result = obelisk.run_sync(plan, activities={"t": t}, observer=events.append)

    async def both() -> None:
        await asyncio.gather(obelisk.run_async(plan, activities={"t": at}),
                             obelisk.run_async(plan, activities={"t": at}))

    asyncio.run(both())
    obelisk.dry_run(calls, mocks={"t": {"return": 3}}, interpreter="asyncio")
    assert obelisk.replay(plan, None, events).context == result.context
    assert seen == [((1234, 11, 12), 0)] * 3
    assert gc.get_threshold() == (1234, 11, 12) and gc.get_freeze_count() == 0


def test_durable_runs_and_their_resumes_leave_the_collector_alone(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Resuming read and replayed the journal in a gc_tuned() block: the library tuned the
    # collector behind its caller's back. The command line, which owns its process, still
    # tunes it around `obelisk resume`.
    touched: list[str] = []
    for name in ("set_threshold", "freeze", "unfreeze", "disable", "enable"):
        monkeypatch.setattr(gc, name, lambda *args, _name=name: touched.append(_name))
    calls = [{"_tool": "t", "_outputPath": "†state.a"},
             {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}]
    activities = {"t": lambda call, tool, context: 1}
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        first = obelisk.run_durable(calls, journal=journal, run_id="R", activities=activities)
        again = obelisk.resume(journal, "R", activities=activities)
        replayed = asyncio.run(obelisk.resume_async(journal, "R", activities=activities))
    assert first.context == again.context == replayed.context
    assert touched == []


@pytest.mark.parametrize(("argv", "module", "row", "frozen"), [
    (["run", "p.json", "--activities", "m:n"], "run", "RUN", True),
    (["resume", "run.db"], "durable", "RESUME", True),
    (["worker", "--journal", "run.db", "--activities", "m:n"], "worker", "WORKER", False),
    (["mcp-server"], "mcpserver", "MCP_SERVER", False),
], ids=["run", "resume", "worker", "mcp-server"])
def test_the_command_line_tunes_the_collector_and_services_never_freeze(
        argv: list[str], module: str, row: str, frozen: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A command's tuned block ends with it, so it may freeze. A worker's or an MCP
    # server's lasts as long as the process while their runs overlap: freezing there kept
    # every garbage cycle for good (the defect of issue 27, in the command line).
    import importlib
    import io

    from obelisk.cli import main

    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, bool]] = []

    def spy(args: Any, out: Any, err: Any) -> int:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        return 0

    home = importlib.import_module(f"obelisk.cli.{module}")
    monkeypatch.setattr(home, row, getattr(home, row)._replace(run=spy))
    assert main(argv, io.StringIO(), io.StringIO()) == 0
    assert seen == [(50_000, frozen)]
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_tunes_inside_and_restores_after() -> None:
    gc.set_threshold(700, 10, 10)
    with obelisk.gc_tuned():
        assert gc.get_threshold()[0] >= 50_000
        assert gc.get_freeze_count() == 0  # freezing is asked for apart
    assert gc.get_threshold() == (700, 10, 10)
    with obelisk.gc_tuned(freeze=True):
        assert gc.get_threshold()[0] >= 50_000
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_nested_and_overlapping_uses_restore_only_at_the_last_exit() -> None:
    gc.set_threshold(700, 10, 10)
    outer = obelisk.gc_tuned(freeze=True)
    inner = obelisk.gc_tuned(freeze=True)
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)  # the first to leave is not the last one running
    assert gc.get_threshold()[0] >= 50_000 and gc.get_freeze_count() > 0
    inner.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_an_exception_still_restores() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), obelisk.gc_tuned(freeze=True):
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_a_disabled_collector_is_left_alone() -> None:
    gc.set_threshold(700, 10, 10)
    gc.disable()
    with obelisk.gc_tuned(freeze=True):
        assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_a_large_run_spaces_young_collections_by_its_size() -> None:
    # Each young collection walks the run's persistent vectors whole: collecting every
    # fixed number of allocations made the cost per call grow with the plan.
    gc.set_threshold(700, 10, 10)
    with obelisk.gc_tuned(100_000):
        assert gc.get_threshold()[0] >= 5_000_000
        with obelisk.gc_tuned(10):  # a smaller run under way keeps the wider spacing
            assert gc.get_threshold()[0] >= 5_000_000
    assert gc.get_threshold() == (700, 10, 10)
    with obelisk.gc_tuned(), obelisk.gc_tuned(1_000_000):  # a larger run joining widens it
        assert gc.get_threshold()[0] >= 50_000_000
    assert gc.get_threshold() == (700, 10, 10)


def test_gc_keep_freezes_only_inside_a_freezing_block() -> None:
    assert gc.get_freeze_count() == 0
    for _ in range(collector.GC_FREEZE_EVERY):
        collector.gc_keep()
    assert gc.get_freeze_count() == 0  # no block: nothing frozen
    with obelisk.gc_tuned():
        for _ in range(collector.GC_FREEZE_EVERY):
            collector.gc_keep()
        assert gc.get_freeze_count() == 0  # a block that did not ask to freeze
    with obelisk.gc_tuned(freeze=True):
        kept = [[] for _ in range(10)]  # tracked objects made in the block
        frozen = gc.get_freeze_count()
        for _ in range(collector.GC_FREEZE_EVERY):
            collector.gc_keep()
        assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_freeze_count() == 0  # released when the last block ends


def test_what_a_freezing_block_made_joins_the_oldest_generation() -> None:
    # No young collection walks a finished run's result or a just-compiled plan.
    gc.set_threshold(700, 10, 10)
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    calls = [{"_tool": "a", "x": f"†state.s{i}", "_outputPath": f"†state.s{i + 1}"}
             for i in range(2_000)]
    try:
        with obelisk.gc_tuned(len(calls), freeze=True):
            plan = obelisk.compile_plan(calls)
            kept = [[] for _ in range(5_000)]
            gc.callbacks.append(seen)  # inside: the restored threshold acts at once
        after = [[] for _ in range(100)]  # a few allocations, far below the threshold
    finally:
        gc.callbacks.remove(seen)
    assert collections == []
    assert gc.get_count()[0] < 700
    assert all(gc.is_tracked(item) for item in kept[:10] + after[:10])
    assert len(plan.nodes) == len(calls)
    assert gc.get_freeze_count() == 0


def test_objects_the_program_froze_stay_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    # Unfreezing is all or nothing: a program that froze objects (before forking, say)
    # keeps them frozen, so a freezing block then freezes nothing itself.
    monkeypatch.setattr(collector._Tuning, "program_freezes", False)  # restored after
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with obelisk.gc_tuned(freeze=True):
            kept = [[] for _ in range(100)]
            for _ in range(collector.GC_FREEZE_EVERY):
                collector.gc_keep()
        # (a frozen object that dies leaves the count: it can only shrink a little)
        assert 0 < gc.get_freeze_count() <= frozen and len(kept) == 100
    finally:
        gc.unfreeze()


def test_once_the_program_is_seen_freezing_nothing_is_counted_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Counting walks every frozen object (milliseconds for a million): it is done while
    # nothing of obelisk's is frozen, and only until the program is seen freezing.
    monkeypatch.setattr(collector._Tuning, "program_freezes", False)
    counted: list[int] = []
    real = gc.get_freeze_count

    def count() -> int:
        counted.append(1)
        return real()

    monkeypatch.setattr(gc, "get_freeze_count", count)
    assert collector.may_freeze() and len(counted) == 1
    gc.freeze()
    try:
        assert not collector.may_freeze() and len(counted) == 2
        with obelisk.gc_tuned(freeze=True):
            pass
        assert not collector.may_freeze()
        assert len(counted) == 2  # sticky: never counted again
    finally:
        gc.unfreeze()
