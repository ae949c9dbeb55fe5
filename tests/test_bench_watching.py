"""bench/watching.py: each contender's run gives the workload's answer, and a watched run
tells three events a call and three of its own (no timing here)."""

from __future__ import annotations

import pytest
from bench_scripts import load_script

watching = load_script("watching")


@pytest.mark.parametrize("kind", ["fan-out", "chain"])
def test_every_contender_gives_the_answer(kind: str) -> None:
    for contender in watching.CONTENDERS:
        _, told = watching.once(contender, kind, 30)
        assert told == (0 if contender == "unwatched" else 3 * 30 + 3)
