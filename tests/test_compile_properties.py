"""Properties of the plan compiler (SEMANTICS §6), on generated plans.

- A generated acyclic plan (chains, fan-outs, fan-ins, branches with ``||``, several
  kinds, instances) compiles without errors; its edges are exactly the data dependencies
  the generator wired, and ``order`` respects every edge.
- Adding one back-edge gives exactly one ``cycle`` whose calls are the strongly connected
  calls, computed here independently of the compiler.
- Diagnostics do not depend on anything but the plan: not on a second compile, not on
  the order of keys in a call, not on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from attrs import frozen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obelisk.compiler import compile_plan

KINDS = ("state", "data", "user")
INSTANCES = ("①", "②")
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@frozen
class Generated:
    """A generated plan and what the generator wired into it.

    Calls are generated in dependency order (call ``i`` reads only calls before it), then
    listed in the order ``listed`` (a permutation): ``listed[k]`` is the generation number
    of the call at list index ``k``. ``reads[i]`` are the generation numbers call ``i``
    reads from; ``targets[i]`` the alternatives of its ``_outputPath`` as reference text.
    """

    calls: tuple[dict[str, Any], ...]
    listed: tuple[int, ...]
    reads: tuple[frozenset[int], ...]
    targets: tuple[tuple[tuple[str, ...], ...], ...]
    instances: tuple[str | None, ...]

    def index_of(self, generated: int) -> int:
        return self.listed.index(generated)

    @property
    def plan(self) -> list[dict[str, Any]]:
        return [self.calls[g] for g in self.listed]

    def edges(self) -> set[tuple[int, int]]:
        """(writer, reader) as list indexes, from the generator's own bookkeeping."""
        return {(self.index_of(w), self.index_of(r))
                for r, sources in enumerate(self.reads) for w in sources}


def _visible(writer: str | None, reader: str | None) -> bool:
    return writer is None or writer == reader


@st.composite
def acyclic_plans(draw: st.DrawFn, *, explicit_instances: bool = True,
                  shuffle: bool = True, min_calls: int = 1) -> Generated:
    n = draw(st.integers(min_calls, 9))
    calls: list[dict[str, Any]] = []
    reads: list[frozenset[int]] = []
    targets: list[tuple[tuple[str, ...], ...]] = []
    instances: list[str | None] = []
    for i in range(n):
        instance = draw(st.sampled_from((None, None, *INSTANCES))) if explicit_instances else None
        # Its output: one to three alternatives (a branch), each a fan-out of one or two
        # targets, in any data kind. Every path starts with "c<i>", so only this call
        # writes below it and the dependencies are exactly the ones wired below.
        alternatives = []
        for a in range(draw(st.sampled_from((1, 1, 2, 3)))):
            alternatives.append(tuple(
                f"†{draw(st.sampled_from(KINDS))}.c{i}.a{a}t{t}"
                for t in range(draw(st.integers(1, 2)))))
        # Its reads: earlier calls whose writes it can see.
        sources = [j for j in range(i) if _visible(instances[j], instance)]
        chosen = draw(st.lists(st.sampled_from(sources), min_size=1 if i else 0, max_size=3,
                               unique=True)) if sources else []
        call: dict[str, Any] = {"_tool": f"tool{draw(st.integers(0, 3))}"}
        for number, j in enumerate(chosen):
            call[f"p{number}"] = draw(_expression(targets[j]))
        output = [" && ".join(group) for group in alternatives]
        call["_outputPath"] = " || ".join(
            f"({text})" if len(group) > 1 and len(output) > 1 else text
            for text, group in zip(output, alternatives, strict=True))
        if instance is not None:
            call["_instance"] = instance
        calls.append(call)
        reads.append(frozenset(chosen))
        targets.append(tuple(alternatives))
        instances.append(instance)
    listed = tuple(draw(st.permutations(range(n)))) if shuffle else tuple(range(n))
    return Generated(tuple(calls), listed, tuple(reads), tuple(targets), tuple(instances))


def _expression(alternatives: tuple[tuple[str, ...], ...]) -> st.SearchStrategy[str]:
    """An input expression reading what call ``j`` writes: a bare reference, a path below
    or above it, ``&&`` of two of its targets, or ``||`` with a literal."""
    flat = [t for group in alternatives for t in group]
    one = st.sampled_from(flat)
    return st.one_of(
        one,
        one.map(lambda t: t + ".deep"),                           # below the write
        one.map(lambda t: t.rsplit(".", 1)[0]),                   # above: the whole call
        st.tuples(one, one).map(lambda p: f"{p[0]} && {p[1]}"),
        one.map(lambda t: f"{t} || 'fallback'"),
        st.tuples(one, one).map(lambda p: f"{p[0]} || {p[1]} || 0"),
    )


def _check_order(order: tuple[int, ...], edges: set[tuple[int, int]], n: int) -> None:
    assert sorted(order) == list(range(n))
    place = {v: k for k, v in enumerate(order)}
    for w, r in edges:
        assert place[w] < place[r], f"edge {w} -> {r} against the order {order}"


@pytest.mark.slow
@SETTINGS
@given(acyclic_plans())
def test_acyclic_plans_compile_without_errors(generated: Generated) -> None:
    compiled = compile_plan(generated.plan)
    assert compiled.ok, [d.to_json() for d in compiled.errors]
    # A read below the last alternative (the error object) may name a key it lacks: an
    # unknown-field warning, never an error.
    assert {d.code for d in compiled.diagnostics
            if not (d.code == "unknown-field" and not d.is_error)} <= {"write-race",
                                                                       "unreachable"}
    got = {(compiled.nodes[e.writer].index, compiled.nodes[e.reader].index)
           for e in compiled.edges}
    assert got == generated.edges()
    _check_order(compiled.order, got, len(generated.calls))


@pytest.mark.slow
@SETTINGS
@given(acyclic_plans(explicit_instances=False))
def test_instanced_plans_compile_without_errors(generated: Generated) -> None:
    context = [{"type": "state", "_instance": i, "seen": True} for i in INSTANCES]
    compiled = compile_plan(generated.plan, context=context, instances=True)
    assert compiled.ok, [d.to_json() for d in compiled.errors]
    n = len(generated.calls)
    assert [(node.index, node.instance) for node in compiled.nodes] == [
        (k, i) for k in range(n) for i in INSTANCES]
    node_of = {(node.index, node.instance): node.id for node in compiled.nodes}
    got = {(e.writer, e.reader) for e in compiled.edges}
    # Each copy depends only on the copies of its sources in its own instance.
    assert got == {(node_of[w, i], node_of[r, i]) for w, r in generated.edges()
                   for i in INSTANCES}
    _check_order(compiled.order, got, len(compiled.nodes))


def _reachable(reads: tuple[frozenset[int], ...], start: int) -> set[int]:
    """Calls reachable from ``start`` along writer -> reader, ``start`` included."""
    readers: dict[int, set[int]] = {}
    for r, sources in enumerate(reads):
        for w in sources:
            readers.setdefault(w, set()).add(r)
    seen = {start}
    todo = [start]
    while todo:
        for r in readers.get(todo.pop(), ()):
            if r not in seen:
                seen.add(r)
                todo.append(r)
    return seen


@pytest.mark.slow
@SETTINGS
@given(acyclic_plans(explicit_instances=False, min_calls=2), st.data())
def test_one_back_edge_makes_exactly_one_cycle(generated: Generated, data: st.DataObject) -> None:
    n = len(generated.calls)
    reach = [_reachable(generated.reads, v) for v in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(n) if i < j and j in reach[i]]
    i, j = data.draw(st.sampled_from(pairs), label="back edge reader, writer")
    # Call i now also reads what call j writes: j -> i closes every path i ->* j.
    calls = list(generated.calls)
    calls[i] = {**calls[i], "back": generated.targets[j][0][0]}
    plan = [calls[g] for g in generated.listed]
    expected = sorted(generated.index_of(k) for k in range(n) if k in reach[i] and j in reach[k])

    compiled = compile_plan(plan)
    cycles = [d for d in compiled.diagnostics if d.code == "cycle"]
    assert len(cycles) == 1
    assert list(cycles[0].calls) == expected
    assert cycles[0].call == expected[0]
    assert [d.code for d in compiled.errors] == ["cycle"]
    # The loop stands together in the order, which still respects every other edge.
    got = {(compiled.nodes[e.writer].index, compiled.nodes[e.reader].index)
           for e in compiled.edges}
    place = {v: k for k, v in enumerate(compiled.order)}
    members = [place[v] for v in expected]
    assert sorted(members) == list(range(min(members), min(members) + len(members)))
    loop = set(expected)
    _check_order(compiled.order, {e for e in got if not (e[0] in loop and e[1] in loop)}, n)


@pytest.mark.slow
@SETTINGS
@given(acyclic_plans(), st.randoms(use_true_random=False))
def test_diagnostics_do_not_depend_on_compiling_again_or_key_order(
        generated: Generated, rnd: Any) -> None:
    # Make the plan noisier: a dangling read and a duplicate writer.
    plan = [*generated.plan, {"_tool": "x", "p": "†state.nowhere"},
            *[{**c, "_tool": "again"} for c in generated.plan[:2]]]
    first = [d.to_json() for d in compile_plan(plan).diagnostics]
    assert [d.to_json() for d in compile_plan(plan).diagnostics] == first
    shuffled = []
    for call in plan:
        items = list(call.items())
        rnd.shuffle(items)
        shuffled.append(dict(items))
    assert [d.to_json() for d in compile_plan(shuffled).diagnostics] == first


# A fixed plan with every kind of diagnostic, many of each, and sets all over the
# compiler's inside (guards, writers, candidate paths for hints).
NOISY_PLAN: dict[str, Any] = {
    "context": [
        {"type": "input", "input": {"city": "Paris"},
         "schema": {"type": "object", "properties": {"country": {"type": "string"}}}},
        {"type": "state", "user": {"name": "A", "email": "a@b.c"}},
    ],
    "plan": [
        *[{"_tool": f"w{i}", "_outputPath": "†state.shared || †data.err" if i % 2
           else "†state.shared.x"} for i in range(12)],
        *[{"_tool": "r", "p": f"†state.usr.{k}", "q": f"†data.nothing{k} && †input.city"}
          for k in ("name", "email", "id")],
        {"_tool": "a", "p": "†state.b", "_outputPath": "†state.a"},
        {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b && †state.shared"},
        {"_tool": "both", "x": "†data.err", "y": "†state.shared", "_scopes": ["state", "data"]},
        {"_tool": "bad", "p": "†state.", "_outputPath": "†text.x", "_outputMethod": "put",
         "_scopes": [1]},
        {"_tool": "in", "p": "†input.country", "q": "†input.zip"},
        {"_tool": "check", "_outputPath": "†state.yes || †state.no"},
        {"_tool": "needsBoth", "a": "†state.yes", "b": "†state.no"},
        {"_tool": "late", "_outputPath": "†state.late && †data.late"},
        "not a call",
    ],
}


@pytest.mark.slow
def test_diagnostics_do_not_depend_on_the_hash_seed(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "noisy.json"
    path.write_text(json.dumps(NOISY_PLAN, ensure_ascii=False), encoding="utf-8")
    outputs = {}
    for seed in ("0", "1", "31337"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        for fmt in ("json", "text"):
            result = subprocess.run(
                [sys.executable, "-m", "obelisk", "validate", "--format", fmt, str(path)],
                capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)
            assert result.returncode == 1, result.stderr
            assert result.stderr == ""
            outputs[seed, fmt] = result.stdout
    for fmt in ("json", "text"):
        assert outputs["0", fmt] == outputs["1", fmt] == outputs["31337", fmt]
    diagnostics = json.loads(outputs["0", "json"])
    codes = {d["code"] for d in diagnostics}
    assert {"write-race", "dangling-reference", "external-reference", "cycle", "unreachable",
            "scope-race", "syntax", "invalid-output-target", "invalid-output-method",
            "invalid-meta", "invalid-call"} <= codes
    assert len(diagnostics) > 60
