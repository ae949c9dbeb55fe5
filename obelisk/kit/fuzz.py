"""``obelisk fuzz``: property-based differential testing of an implementation against obelisk.

For each op, hypothesis draws cases (:mod:`obelisk.kit.strategies`), asks obelisk (in
process) and the adapter, and compares what the protocol fixes:

- ``resolve``: the outcome (value, MISSING, syntax or write error) and the value;
- ``check``: the error-severity diagnostics with a known code, as ``(code, call, calls)``;
- ``run``: every call's outcome, the errors as ``(call, instance, type)``, the final views.

At the first difference hypothesis shrinks the case (``hypothesis.find``), then
:mod:`obelisk.kit.difference` takes out every call, message and member the difference
does not need. The minimal case is printed as a conformance vector whose expectation is
obelisk's answer, with the adapter's answer in its ``description``. The same seed gives
the same cases.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from attrs import frozen
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from obelisk.kit import local
from obelisk.kit.difference import ask_safely, compare, prune, simplify
from obelisk.kit.judge import Implementation
from obelisk.kit.planstrategies import plans
from obelisk.kit.protocol import Op
from obelisk.kit.strategies import resolve_cases

FUZZ_OPS = ("resolve", "check", "run")
#: Examples drawn per op unless ``--examples`` says otherwise.
#: (obelisk.kit.cli states the same number without importing hypothesis; a test checks.)
DEFAULT_EXAMPLES = 300
#: At most this many cases are tried while shrinking a difference (a count, not a time,
#: so that the same seed still gives the same vector).
SHRINK_BUDGET = 500


# -- cases and requests -------------------------------------------------------------------


def cases(op: str) -> st.SearchStrategy[dict[str, Any]]:
    """The requests fuzzed for ``op`` (protocol requests, ready to send)."""
    if op == "resolve":
        return resolve_cases().map(lambda case: {
            "op": "resolve", "context": case[0], "ref": case[1], "instance": case[2]})
    if op == "check":
        return plans(wild=True).map(lambda p: {
            "op": "check", "context": p["context"], "tools": None, "plan": p["plan"],
            "instances": p["instances"]})
    return plans().map(lambda p: {
        "op": "run", "context": p["context"], "tools": None, "plan": p["plan"],
        "mocks": p["mocks"], "instances": p["instances"]})


# -- the search ------------------------------------------------------------------------------


@frozen
class Difference:
    """A minimal case on which the adapter and obelisk disagree."""

    op: str
    request: dict[str, Any]
    ours: dict[str, Any]
    theirs: dict[str, Any]
    #: How many cases were drawn before the first difference (shrinking not counted).
    examples: int
    seed: int

    def vector(self) -> dict[str, Any]:
        """The case as a conformance vector: the expectation is obelisk's answer."""
        return vector_of(self)


def search(adapter: Implementation, op: str, examples: int = DEFAULT_EXAMPLES, seed: int = 0,
           on_example: Callable[[int, bool], None] | None = None) -> Difference | None:
    """The minimal differing case for ``op`` in at most ``examples`` cases, or None."""
    count = [0]
    found = [False]
    first = [0]

    best = [""]

    def disagrees(request: dict[str, Any]) -> bool:
        count[0] += 1
        if on_example is not None:
            on_example(count[0], found[0])
        if found[0] and count[0] - first[0] > SHRINK_BUDGET:
            # Out of shrinking budget: only the smallest case so far still counts, so that
            # hypothesis stops here (its final replay of that case agrees).
            return json.dumps(request, sort_keys=True) == best[0]
        result = compare(adapter, op, request)
        if result and not found[0]:
            found[0], first[0] = True, count[0]
        if result:
            best[0] = json.dumps(request, sort_keys=True)
        return result

    # Explicit, so that a test profile (derandomize, say) never changes what a seed draws.
    config = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck))
    try:
        minimal = find(cases(op), disagrees, settings=config, random=random.Random(seed))
    except NoSuchExample:
        return None
    minimal = simplify(adapter, op, prune(adapter, op, minimal))
    return Difference(op, minimal, local.answer(minimal), ask_safely(adapter, minimal),
                      first[0], seed)


# -- from a difference to a vector -----------------------------------------------------------


def vector_of(diff: Difference) -> dict[str, Any]:
    """A ready-to-commit vector for ``diff``; the adapter's answer is in its description."""
    request, ours = diff.request, diff.ours
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:10]
    theirs = json.dumps(diff.theirs, ensure_ascii=False, sort_keys=True)
    vector: dict[str, Any] = {
        "id": f"fuzz/{diff.op}-{digest}",
        "description": f"found by obelisk fuzz --ops {diff.op} --seed {diff.seed}; "
                       f"the adapter answered: {theirs}",
        "context": request["context"],
    }
    if diff.op == "resolve":
        case: dict[str, Any] = {"ref": request["ref"]}
        if request.get("instance") is not None:
            case["instance"] = request["instance"]
        if "error" in ours:
            case["error"] = ours["error"]
        elif "missing" in ours:
            case["missing"] = True
        else:
            case["value"] = ours["value"]
        vector["cases"] = [case]
        return vector
    vector["plan"] = request["plan"]
    if request.get("instances"):
        vector["instances"] = True
    if diff.op == "check":
        vector["expect"] = {"diagnostics": [_matcher(d) for d in ours["diagnostics"]
                                            if d["severity"] == "error"],
                            "only_listed_errors": True}
        return vector
    vector["mocks"] = request["mocks"]
    vector["expect"] = _run_expect(ours, diff.theirs)
    return vector


def _matcher(diagnostic: Mapping[str, Any]) -> dict[str, Any]:
    out = {"code": diagnostic["code"], "call": diagnostic.get("call")}
    if diagnostic.get("calls"):
        out["calls"] = list(diagnostic["calls"])
    return out


def _run_expect(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    def ident(c: Mapping[str, Any]) -> Any:
        return c["call"] if c.get("instance") is None else [c["call"], c["instance"]]

    expect: dict[str, Any] = {
        key: [ident(c) for c in ours["calls"] if c["outcome"] == key]
        for key in ("executed", "skipped", "failed")}
    expect["errors"] = [{"call": c["call"], "type": c["error"],
                         **({"instance": c["instance"]} if c.get("instance") else {})}
                        for c in ours["calls"] if c.get("error")]
    values: list[dict[str, Any]] = []
    their_views = theirs.get("views") if isinstance(theirs.get("views"), Mapping) else {}
    assert isinstance(their_views, Mapping)
    kinds = sorted(set(ours["views"]) | {k for k in their_views if isinstance(k, str)})
    for kind in kinds:
        if not kind.isidentifier():
            continue  # a kind no reference can name: nothing a vector can state
        mine = ours["views"].get(kind, {})
        other = their_views.get(kind, {})
        other = other if isinstance(other, Mapping) else {}
        for layer in sorted(set(mine) | set(other), key=lambda x: (x != "global", x)):
            case: dict[str, Any] = {"ref": f"†{kind}"}
            if layer != "global":
                case["instance"] = layer
            if layer not in mine:
                case["missing"] = True
            elif (isinstance(mine[layer], Mapping) and set(mine[layer]) == {"error"}):
                case["error"] = "write"
            else:
                case["value"] = mine[layer]
            values.append(case)
    expect["values"] = values
    return expect


# -- the command -------------------------------------------------------------------------------


class _Progress:
    """``op: N examples`` on a terminal, rewritten in place."""

    def __init__(self, stream: TextIO, op: str) -> None:
        self.stream, self.op = stream, op
        self.enabled = stream.isatty()

    def __call__(self, count: int, shrinking: bool) -> None:
        if self.enabled and (count % 10 == 0 or count == 1):
            state = "shrinking a difference" if shrinking else "examples"
            self.stream.write(f"\r{self.op}: {count} {state}   ")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


def main(adapter: Any, ops: list[str], *, examples: int | None, seed: int | None,
         save: str | None, out: TextIO, err: TextIO) -> int:
    """Fuzz ``adapter`` on ``ops``; print and save the first minimal difference. Returns
    the exit code: 0 when no difference was found, 1 when one was."""
    from obelisk.jsonio import InputError, dumps

    budget = examples or DEFAULT_EXAMPLES
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    adapter.start()
    print(f"fuzzing {adapter.name} {adapter.version} ({adapter.command}) with seed {seed}, "
          f"{budget} examples per op", file=out)
    for op in ops:
        if not adapter.supports(Op(op)):
            print(f"{op}: skipped, the adapter does not list it in hello", file=out)
            continue
        progress = _Progress(err, op)
        diff = search(adapter, op, budget, seed, progress)
        progress.close()
        if diff is None:
            print(f"{op}: no difference in {budget} examples", file=out)
            continue
        vector = diff.vector()
        print(f"{op}: the adapter differs from obelisk (found at example {diff.examples}); "
              "the minimal case as a conformance vector:",
              file=out)
        print(dumps(vector), file=out)
        print(f"obelisk answered: {json.dumps(diff.ours, ensure_ascii=False)}", file=out)
        print(f"the adapter answered: {json.dumps(diff.theirs, ensure_ascii=False)}", file=out)
        if save:
            path = os.path.join(save, vector["id"].replace("/", "-") + ".json")
            try:
                os.makedirs(save, exist_ok=True)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(dumps(vector) + "\n")
            except OSError as exc:
                raise InputError(f"cannot save the vector to {path}: "
                                 f"{exc.strerror or exc}") from None
            print(f"saved {path}", file=out)
        print(f"repeat with: obelisk fuzz --against {adapter.command!r} --ops {op} "
              f"--seed {seed} --examples {budget}", file=out)
        return 1
    return 0
