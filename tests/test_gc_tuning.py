"""The collector tuning around runs (interpreters/common.py ``gc_tuned``).

It changes process-wide state, so these tests check that the state always comes back:
after a run, after nested and overlapping uses, after an exception, and never when the
tuning is switched off or the collector is disabled.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

import obelisk
from obelisk.core import collector
from obelisk.interpreters import common


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    before = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*before[0])
    (gc.enable if before[1] else gc.disable)()
    common.TUNE_GC = True


def test_tunes_inside_and_restores_after() -> None:
    gc.set_threshold(700, 10, 10)
    with obelisk.gc_tuned():
        assert gc.get_threshold()[0] >= 50_000
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_nested_and_overlapping_uses_restore_only_at_the_last_exit() -> None:
    gc.set_threshold(700, 10, 10)
    outer = obelisk.gc_tuned()
    inner = obelisk.gc_tuned()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)  # the first to leave is not the last one running
    assert gc.get_threshold()[0] >= 50_000
    inner.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_an_exception_still_restores() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), obelisk.gc_tuned():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_switched_off_or_collector_disabled_changes_nothing() -> None:
    gc.set_threshold(700, 10, 10)
    common.TUNE_GC = False
    with obelisk.gc_tuned():
        assert gc.get_threshold() == (700, 10, 10)
    common.TUNE_GC = True
    gc.disable()
    with obelisk.gc_tuned():
        assert gc.get_threshold() == (700, 10, 10)


def test_runs_leave_the_collector_as_they_found_it() -> None:
    gc.set_threshold(1234, 11, 12)
    plan = [{"_tool": "t", "_outputPath": "†state.a"}]
    obelisk.run_sync(plan, activities={"t": lambda call, tool, context: 1})

    async def t(call: object, tool: object, context: object) -> int:
        return 2

    async def both() -> None:
        await asyncio.gather(obelisk.run_async(plan, activities={"t": t}),
                             obelisk.run_async(plan, activities={"t": t}))

    asyncio.run(both())
    obelisk.dry_run(plan, mocks={"t": {"return": 3}}, interpreter="asyncio")
    assert gc.get_threshold() == (1234, 11, 12)
    assert gc.get_freeze_count() == 0


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


def test_gc_keep_freezes_what_runs_hold_only_while_one_is_under_way() -> None:
    assert gc.get_freeze_count() == 0
    for _ in range(common._GC_FREEZE_EVERY):
        common.gc_keep()
    assert gc.get_freeze_count() == 0  # no run: nothing frozen
    with obelisk.gc_tuned():
        kept = [[] for _ in range(10)]  # noqa: F841 - tracked objects made in the run
        frozen = gc.get_freeze_count()
        for _ in range(common._GC_FREEZE_EVERY):
            common.gc_keep()
        assert gc.get_freeze_count() >= frozen
    assert gc.get_freeze_count() == 0  # released when the last run ends


def test_what_runs_made_joins_the_oldest_generation_when_the_last_run_ends() -> None:
    # No young collection walks a run's objects once it is over: they are kept, mostly.
    gc.set_threshold(700, 10, 10)
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    try:
        with obelisk.gc_tuned():
            kept = [[] for _ in range(5_000)]
            assert gc.get_count()[0] >= 4_000
            gc.callbacks.append(seen)  # inside: the restored threshold acts at once
        after = [[] for _ in range(100)]  # a few allocations, far below the threshold
    finally:
        gc.callbacks.remove(seen)
    assert collections == []
    assert gc.get_count()[0] < 700
    assert all(gc.is_tracked(item) for item in kept[:10] + after[:10])
    assert gc.get_freeze_count() == 0


def test_objects_the_program_froze_stay_frozen_through_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Unfreezing is all or nothing: a program that froze objects (before forking, say)
    # keeps them frozen, so runs then freeze nothing themselves.
    monkeypatch.setattr(collector._State, "program_freezes", False)  # restored after
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with obelisk.gc_tuned():
            kept = [[] for _ in range(100)]
            for _ in range(common._GC_FREEZE_EVERY):
                common.gc_keep()
        # (a frozen object that dies leaves the count: it can only shrink a little)
        assert 0 < gc.get_freeze_count() <= frozen
        obelisk.run_sync([{"_tool": "a", "_outputPath": "†state.a"}],
                         activities={"a": lambda call, tool, context: 1})
        assert 0 < gc.get_freeze_count() <= frozen and len(kept) == 100
    finally:
        gc.unfreeze()


def test_once_the_program_is_seen_freezing_nothing_is_counted_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Counting walks every frozen object (milliseconds for a million): it is done while
    # nothing of obelisk's is frozen, and only until the program is seen freezing.
    monkeypatch.setattr(collector._State, "program_freezes", False)
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
        with obelisk.gc_tuned():
            pass
        obelisk.compile_plan([{"_tool": "a"}])
        assert not collector.may_freeze()
        assert len(counted) == 2  # sticky: never counted again
    finally:
        gc.unfreeze()
