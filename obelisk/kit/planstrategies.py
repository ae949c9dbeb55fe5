"""Hypothesis strategies for plans: output paths, mocks, and plan files with their context.

Published as :mod:`obelisk.testing`; ``obelisk fuzz`` draws its ``check`` and ``run``
cases from :func:`plans`. Every value drawn is plain JSON, ready to send to any
implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from obelisk.kit.strategies import INSTANCES, METHODS, json_values


def output_paths(kinds: Sequence[str] = ("state", "data"), max_alternatives: int = 3,
                 max_targets: int = 2) -> st.SearchStrategy[str]:
    """Output expressions: one target, a fan-out (``&&``), or alternatives (``||``)."""
    target = st.builds(lambda kind, key: f"†{kind}.{key}", st.sampled_from(list(kinds)),
                       st.sampled_from(["a", "b", "c", "r", "err"]))
    group = st.lists(target, min_size=1, max_size=max_targets, unique=True)

    def render(groups: list[list[str]]) -> str:
        return " || ".join(" && ".join(g) if len(groups) == 1 or len(g) == 1
                           else "(" + " && ".join(g) + ")" for g in groups)

    return st.lists(group, min_size=1, max_size=max_alternatives).map(render)


@st.composite
def mock_for(draw: st.DrawFn, index: int, alternatives: Sequence[Sequence[str]] = (),
             scopes: bool = False) -> dict[str, Any]:
    """One mock for the tool of call ``index``: return, raise (a failing mock), echo, an
    explicit branch among ``alternatives`` (or to an undeclared one), echo_scopes."""
    # echo twice: a result that shows the resolved parameters catches reading bugs.
    forms = ["return", "return", "raise", "echo", "echo"]
    if len(alternatives) >= 2:
        forms += ["branch", "branch"]
    if scopes:
        forms.append("echo_scopes")
    form = draw(st.sampled_from(forms))
    if form == "return":
        return {"return": draw(json_values(4))}
    if form == "raise":
        error: dict[str, Any] = {"type": f"E{index}", "message": "m"}
        if draw(st.booleans()):
            error["data"] = draw(json_values(3))
        return {"raise": error}
    if form == "branch":
        targets = [t for group in alternatives for t in group] + ["†state.undeclared"]
        return {"branch": draw(st.sampled_from(targets)), "value": draw(json_values(3))}
    return {form: True}


def mocks(tools: Sequence[str], max_leaves: int = 4) -> st.SearchStrategy[dict[str, Any]]:
    """An explicit mock for every tool in ``tools`` (so that no result depends on an
    implementation's example generator)."""
    del max_leaves  # the mock values are bounded by json_values
    return st.fixed_dictionaries({tool: mock_for(number) for number, tool in enumerate(tools)})


@st.composite
def plans(draw: st.DrawFn, max_calls: int = 6, instances: bool = True, scopes: bool = True,
          wild: bool = False) -> dict[str, Any]:
    """A plan file: ``context``, ``plan``, ``mocks`` (one per tool) and ``instances``.

    Chains, fan-out, fan-in, ``||`` branches, ``&&`` groups, instances (mapped, and calls
    with their own ``_instance``), ``_scopes``, fire-and-forget calls and failing mocks.
    Plans are race-free by construction (every call writes its own paths). With ``wild``,
    some calls have compile errors: a dangling read, a cycle, an invalid output method,
    an invalid scope, a broken expression.
    """
    ids = list(draw(st.sampled_from([[], list(INSTANCES)]))) if instances else []
    context = _plan_context(draw, ids)
    plan: list[Any] = []
    mock_table: dict[str, Any] = {}
    readable: list[str] = []  # targets of earlier calls: reading one orders the calls
    count = max_calls
    for index in range(count):
        # Each slot may stay empty, and shrinks to empty: the shrinker can then drop any
        # call, not only the last ones, and the other calls keep their names.
        if draw(st.integers(0, 2)) == 0:
            continue
        call: dict[str, Any] = {"_tool": f"t{index}"}
        for number in range(draw(st.integers(0, 2))):
            call[f"p{number}"] = _param(draw, readable)
        shape = draw(st.sampled_from(["none", "one", "fanout", "two", "three"]))
        sizes = {"none": [], "one": [1], "fanout": [2], "two": [1, 2], "three": [2, 1, 1]}[shape]
        alternatives = [[f"†{'state' if (alt + k) % 2 == 0 else 'data'}.c{index}_{alt}_{k}"
                         for k in range(size)] for alt, size in enumerate(sizes)]
        own_instance = bool(ids) and draw(st.integers(0, 4)) == 0
        if own_instance:
            call["_instance"] = draw(st.sampled_from(ids))  # runs once, in one instance
        if alternatives:
            call["_outputPath"] = " || ".join(
                " && ".join(g) if len(alternatives) == 1 or len(g) == 1
                else "(" + " && ".join(g) + ")" for g in alternatives)
            if draw(st.booleans()):
                call["_outputMethod"] = draw(st.sampled_from(list(METHODS)))
            if not own_instance:  # what one instance writes, the others cannot read
                readable += [t for group in alternatives for t in group]
        has_scopes = scopes and draw(st.integers(0, 3)) == 0
        if has_scopes:
            # Only kinds no call writes: a scope over †state would show a call whatever
            # unordered calls wrote before it (a scope-race), which is timing, not semantics.
            call["_scopes"] = draw(st.sampled_from([["input"], ["input", "user"], []]))
        if wild and draw(st.integers(0, 3)) == 0:
            _break(draw, call, count)
        if ids and draw(st.integers(0, 2)) == 0:
            mock_table[call["_tool"]] = {"by_instance": {
                i: draw(mock_for(index, alternatives, has_scopes)) for i in ids}}
        else:
            mock_table[call["_tool"]] = draw(mock_for(index, alternatives, has_scopes))
        plan.append(call)
    return {"context": context, "plan": plan, "mocks": mock_table, "instances": bool(ids)}


def _plan_context(draw: st.DrawFn, ids: list[str]) -> list[Any]:
    """A plan's context: an input message, one per instance, maybe some state. The input's
    list has distinct elements, so that its first and last differ."""
    context: list[Any] = [{"type": "input",
                           "input": {"x": 1, "s": "text", "list": [1, 2, 3]}}]
    for instance in ids:
        context.append({"type": "input", "_instance": instance, "x": draw(st.integers(2, 9))})
    if draw(st.booleans()):
        context.append({"type": "state", "state": {"shared": draw(json_values(3))}})
    return context


def _param(draw: st.DrawFn, readable: list[str]) -> Any:
    """A parameter: an input read, a read of an earlier call's target (alone, with a
    fallback, gating another, nested in a value), or a literal."""
    shape = draw(st.sampled_from(["input", "read", "fallback", "fallback", "gate",
                                  "literal", "nested"]))
    if shape in ("read", "fallback", "gate", "nested") and not readable:
        shape = "input"
    if shape == "input":
        return draw(st.sampled_from(["†input.x", "†input.s", "†input.list.-1",
                                     "†input.list.0", "†input.nothing || 'dflt'"]))
    if shape == "read":
        return draw(st.sampled_from(readable))
    if shape == "fallback":
        return f"{draw(st.sampled_from(readable))} || 'fallback'"
    if shape == "gate":
        return f"{draw(st.sampled_from(readable))} && {draw(st.sampled_from(readable))}"
    if shape == "nested":
        return {"deep": [draw(st.sampled_from(readable)), 1]}
    return draw(json_values(3))


def _break(draw: st.DrawFn, call: dict[str, Any], count: int) -> None:
    """Give ``call`` one compile error (for fuzzing ``check``)."""
    fault = draw(st.sampled_from(["dangling", "cycle", "method", "scope", "syntax"]))
    if fault == "dangling":
        call["dangling"] = "†state.nothing_writes_this"
    elif fault == "cycle" and count > 1:
        other = draw(st.integers(0, count - 1))
        # Read what a call (maybe itself, maybe a later one) writes first: a cycle when
        # that call also reads this one's output.
        call["loop"] = f"†state.c{other}_0_0"
    elif fault == "method":
        call["_outputMethod"] = "append"
    elif fault == "scope":
        call["_scopes"] = ["system"]
    else:
        call["broken"] = "†state.("
