"""Did-you-mean hints for dangling references.

The candidate paths (written by a visible call, or present in the context, so never a null
one) are gathered once per instance, and every search of one check shares the graph's
``hint_budget``: each search compares the reference with every candidate, so a plan with
thousands of dangling references against thousands of written paths would otherwise take
minutes; past the budget a generic hint is given.
"""

from __future__ import annotations

from typing import Any

from pyrsistent import PMap

from obelisk.compiler.hints import close_match
from obelisk.compiler.plangraph import PlanGraph
from obelisk.core.ast import Reference
from obelisk.core.context import Context
from obelisk.core.errors import WriteError
from obelisk.core.paths import Path
from obelisk.core.pathtext import render_reference
from obelisk.core.text import article

#: Rendered reference -> (kind, path, where it comes from), in a stable order.
Candidates = dict[str, tuple[str, Path, str]]


class Hints:
    """The hint searches of one dangling-reference pass, in its deterministic order.

    It keeps the candidates it has gathered and what is left of the budget: state local to
    one pass of one check, never shared beyond it.
    """

    def __init__(self, graph: PlanGraph) -> None:
        self.graph = graph
        self.budget = graph.limits.hint_budget
        self.candidates: dict[str | None, Candidates] = {}

    def near_miss(self, ref: Reference, instance: str | None) -> str:
        """A hint for a reference nothing provides: a close candidate, nearby paths, or
        how to provide it."""
        generic = (f"write it with an earlier call's _outputPath, or add "
                   f"{article(ref.kind)} message to the context")
        if _is_null(self.graph.context, ref, instance):
            # Provided means present: a null in the context is no value, so say that
            # rather than suggest the very path that was read.
            declare = (", or declare it in the input message's schema" if ref.kind == "input"
                       else "")
            return (f"{ref} is null in the context, and a null does not count as a value: "
                    f"give it a value, or read it with a default ({ref} || <default>)"
                    f"{declare}")
        if self.budget <= 0:  # spent: do not even gather the candidates
            return generic
        candidates = self._candidates(instance)
        if len(candidates) > self.budget:
            return generic
        self.budget -= len(candidates)
        near = close_match(str(ref), list(candidates), 0.75)
        if near is not None:
            return f"did you mean {near} ({candidates[near][2]})?"
        return _nearby(ref, candidates) or generic

    def _candidates(self, instance: str | None) -> Candidates:
        found = self.candidates.get(instance)
        if found is None:
            found = self.candidates[instance] = _gather(self.graph, instance)
        return found


def _gather(graph: PlanGraph, instance: str | None) -> Candidates:
    found: Candidates = {}
    # Only the global layer and the instance's own: never every instance's writes.
    writes = [(writer, str(target), target.kind, target.path)
              for layer in graph.index.visible_to(instance)
              for kind in list(layer.kinds())
              for writer, _, target in layer.under_kind(kind)]
    writes.sort(key=lambda w: (w[0], w[1]))  # by writer, then text: never by path
    for writer, text, kind, path in writes:
        found.setdefault(text, (kind, path, f"written by {graph.nodes[writer].label}"))
    for kind in graph.context.kinds:
        for path in _leaf_paths(graph.context, kind, instance):
            found.setdefault(render_reference(kind, path), (kind, path, "present in the context"))
    return found


def _nearby(ref: Reference, candidates: Candidates) -> str | None:
    """The paths below the deepest path above the reference that has any (None if none)."""
    best = -1
    for kind, path, _ in candidates.values():
        if kind != ref.kind or not path:
            continue
        common = 0
        for a, b in zip(path, ref.path, strict=False):
            if a != b:
                break
            common += 1
        best = max(best, min(common, len(path) - 1, len(ref.path) - 1))
    if best < 0:
        return None
    below = sorted(c for c, (kind, path, _) in candidates.items()
                   if kind == ref.kind and len(path) > best and path[:best] == ref.path[:best])
    shown = ", ".join(f"{c} ({candidates[c][2]})" for c in below[:3])
    return f"nearby: {shown}"


def _is_null(ctx: Context, ref: Reference, instance: str | None) -> bool:
    try:
        return ctx.value(ref.kind, ref.path, instance) is None
    except WriteError:
        return False


def _leaf_paths(ctx: Context, kind: str, instance: str | None, limit: int = 2000) -> list[Path]:
    try:
        root = ctx.value(kind, (), instance)
    except WriteError:
        return []
    out: list[Path] = []
    stack: list[tuple[Path, Any]] = [((), root)]
    while stack and len(out) < limit:
        path, value = stack.pop()
        if path and value is not None:  # a null is not provided: never a candidate
            out.append(path)
        if isinstance(value, PMap) and len(path) < 8:
            stack.extend(((*path, k), v) for k, v in value.items())
    return out
