"""Random plan files through every plan command: never an internal error.

A command answers bad input with a message and exit 1 or 2; "internal error" (the last
resort in cli.main) means a bug. The generator mixes well-formed calls, tools and mocks
with arbitrary JSON in every position. Seeded, so a failure reproduces.
"""

from __future__ import annotations

import io
import json
import pathlib
import random
from typing import Any

import pytest

from obelisk.cli import main

KEYS = ["_tool", "_outputPath", "_outputMethod", "_instance", "_scopes", "_output", "x", "y",
        "type", "kind", "data", "state", "input", "plan", "context", "tools", "mocks",
        "instances", "properties", "return", "raise", "branch", "sequence", "by_instance", "echo"]
SCALARS = [None, True, 0, -1, 1.5, "x", "†state.a", "†state.", "†input.q || 'z'",
           "†state.a && †b.c", "", "\\†x", [], {}]


def value(rnd: random.Random, depth: int = 0) -> Any:
    r = rnd.random()
    if depth > 3 or r < 0.3:
        return rnd.choice(SCALARS)
    if r < 0.6:
        return [value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {rnd.choice(KEYS): value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


def plan_file(rnd: random.Random) -> Any:
    context = [rnd.choice([{"type": "state", "a": value(rnd, 2)},
                           {"type": "input", "input": value(rnd, 2)}, value(rnd, 2)])
               for _ in range(rnd.randint(0, 3))]
    plan = [rnd.choice([
        {"_tool": rnd.choice(["t", "u"]), "x": rnd.choice(["†state.a", "†input.q", "†state.b.c", 1]),
         "_outputPath": rnd.choice(["†state.a", "†state.b || †state.c", "†state.b.c && †data.d",
                                    "†text.z", "nope"]),
         "_outputMethod": rnd.choice(["set", "push", "merge", "concat", "bad"])},
        value(rnd, 2)]) for _ in range(rnd.randint(0, 5))]
    data: dict[str, Any] = {"context": context, "plan": plan}
    if rnd.random() < 0.4:
        data["tools"] = [rnd.choice([
            {"type": "object", "properties": {
                "_tool": {"const": "t"}, "x": {"type": rnd.choice(["string", "integer", "object"])},
                "_output": {"type": "object"}}},
            value(rnd, 2)])]
    if rnd.random() < 0.5:
        data["mocks"] = {"t": rnd.choice([{"return": value(rnd, 2)},
                                          {"raise": {"type": "E", "message": "m"}},
                                          {"echo": True}, {"sequence": [{"return": 1}]},
                                          value(rnd, 2)])}
    if rnd.random() < 0.2:
        data["instances"] = rnd.choice([True, False, "yes"])
    return data if rnd.random() > 0.05 else value(rnd, 1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_random_plan_files_never_cause_an_internal_error(seed: int, tmp_path: pathlib.Path) -> None:
    rnd = random.Random(seed)
    for number in range(40):
        path = tmp_path / f"plan{number}.json"
        data = plan_file(rnd)
        path.write_text(json.dumps(data), encoding="utf-8")
        for argv in (["validate", str(path)], ["dry-run", str(path), "--json"],
                     ["dry-run", str(path), "--explore", "--interpreter", "asyncio"],
                     ["graph", str(path), "--format", "dot"]):
            out, err = io.StringIO(), io.StringIO()
            code = main(argv, out=out, err=err)
            assert code in (0, 1, 2), (argv, json.dumps(data))
            assert "internal error" not in err.getvalue(), (argv, json.dumps(data), err.getvalue())
