"""The conformance runner (the vectors of docs/conformance-vectors.md): vectors in, one PASS/FAIL line each out.

A vector FAILS, never skips, when it cannot be read or uses a field the format does not
describe. Judging works on ANSWERS: the protocol responses (``obelisk.kit.protocol``) of
an :class:`Implementation`, which is obelisk itself in process (:class:`Local`, the
default) or an adapter subprocess (``obelisk.kit.client.AdapterClient``). The same
vectors and the same matching apply to both. A vector that needs an op the
implementation does not answer is *unsupported*: counted apart, never passed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attrs import frozen

from obelisk import Context, MessageError, ObeliskError
from obelisk.jsonio import InputError, load_json
from obelisk.kit import local
from obelisk.kit.judge import (
    RUN_FIELDS,
    Implementation,
    case_problems,
    check_plan,
    judge_agent,
    judge_case,
)
from obelisk.kit.protocol import Op

__all__ = [
    "Entry", "Local", "Outcome", "Verdict", "check_entry", "check_vector", "entries",
    "find_vector_files", "judge", "load_vectors", "needed_ops", "run",
]

AGENT_FIELDS = frozenset({"output_schema", "mode", "max_ticks", "solutions", "latent",
                          "requests", "max_delegate_depth", "reviews"})
VECTOR_FIELDS = frozenset(
    {"id", "description", "context", "tools", "cases", "plan", "instances", "mocks", "expect"}
)
#: An agent vector (one with ``solutions``) has no cases, plan or instances of its own.
AGENT_VECTOR_FIELDS = frozenset({"id", "description", "context", "tools", "mocks", "expect"}
                                ) | AGENT_FIELDS


class Local:
    """obelisk itself, in process: the answers of ``obelisk.kit.local``."""

    def __init__(self, interpreter: str = "sync") -> None:
        self.interpreter = interpreter

    def supports(self, op: Op) -> bool:
        """Whether obelisk answers ``op`` (``agent`` arrives with the agent loop)."""
        return op in local.OPS

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """obelisk's answer to ``request``."""
        return local.answer(request, self.interpreter)


@frozen
class Outcome:
    """The result of one vector: its id, where it came from, and what did not match.

    ``unsupported`` names the ops the vector needs that the implementation lacks; such a
    vector neither passes nor fails.
    """

    id: str
    source: str
    problems: tuple[str, ...]
    unsupported: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when the vector was judged and every expectation held."""
        return not self.problems and not self.unsupported


@frozen
class Verdict:
    """How one vector fared: its problems, or the ops it needs that are not answered."""

    problems: tuple[str, ...]
    unsupported: tuple[str, ...] = ()


def find_vector_files(paths: Sequence[str]) -> Iterator[str]:
    """Every file named, and every ``*.json`` below every folder named, sorted."""
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, files in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in files if f.endswith(".json"))
            yield from sorted(found)
        else:
            yield path


def load_vectors(path: str) -> list[tuple[Any, str]]:
    """The vectors in one file (an object or an array of them), with their source."""
    data = load_json(path)
    items = data if isinstance(data, list) else [data]
    return [(item, f"{path}[{i}]" if isinstance(data, list) else path) for i, item in enumerate(items)]


def needed_ops(vector: Mapping[str, Any]) -> list[Op]:
    """The protocol ops judging ``vector`` takes: resolve for cases, run or check for a
    plan (run when the expectation describes a run), agent for an agent vector."""
    if "solutions" in vector:
        return [Op.AGENT]
    ops = [Op.RESOLVE] if vector.get("cases") else []
    if "plan" in vector:
        expect = vector.get("expect")
        runs = isinstance(expect, Mapping) and any(k in expect for k in RUN_FIELDS)
        ops.append(Op.RUN if runs else Op.CHECK)
    return ops


def check_vector(vector: Any, interpreter: str = "sync") -> list[str]:
    """Every way ``vector`` fails to hold for obelisk; an empty list means it passes."""
    verdict = judge(vector, Local(interpreter))
    return list(verdict.problems) + [f"needs the {op!r} op, which obelisk does not answer yet"
                                     for op in verdict.unsupported]


def judge(vector: Any, implementation: Implementation) -> Verdict:
    """How ``vector`` fares on ``implementation``'s answers."""
    if not isinstance(vector, Mapping):
        return Verdict((f"a vector must be a JSON object, got {type(vector).__name__}",))
    agent = "solutions" in vector
    fields = AGENT_VECTOR_FIELDS if agent else VECTOR_FIELDS
    problems = [f"unknown field {k!r} (fields: {', '.join(sorted(fields))})"
                for k in vector if k not in fields]
    if not isinstance(vector.get("id"), str) or not vector.get("id"):
        problems.append('"id" must be a non-empty string')
    if "cases" not in vector and "plan" not in vector and not agent:
        problems.append('a vector needs "cases", "plan", or both')
    raw_context = vector.get("context", [])
    if not isinstance(raw_context, list):
        return Verdict((*problems, '"context" must be an array of messages'))
    try:
        Context.of(raw_context)
    except MessageError as exc:
        return Verdict((*problems, f"context: {exc}"))
    if problems:
        return Verdict(tuple(problems))
    try:
        lacking = tuple(op.value for op in needed_ops(vector) if not implementation.supports(op))
        if lacking:
            return Verdict((), lacking)
        if agent:
            return Verdict(tuple(judge_agent(vector, implementation)))
        return Verdict(tuple(_judge_plain(vector, raw_context, implementation)))
    except ObeliskError as exc:  # no answer at all (an adapter crashed): this vector fails
        return Verdict((str(exc),))


def _judge_plain(vector: Mapping[str, Any], raw_context: list[Any],
                 implementation: Implementation) -> list[str]:
    problems: list[str] = []
    cases = vector.get("cases", [])
    if not isinstance(cases, list):
        return ['"cases" must be an array']
    for number, case in enumerate(cases):
        bad = case_problems(case)
        if bad:
            problems.extend(f"case {number}: {p}" for p in bad)
            continue
        response = implementation.ask({"op": "resolve", "context": raw_context,
                                       "ref": case["ref"], "instance": case.get("instance")})
        problems.extend(f"case {number}: {p}" for p in judge_case(case, response))
    if "plan" in vector:
        problems.extend(check_plan(vector, implementation))
    elif "expect" in vector:
        problems.append('"expect" describes a plan run, but the vector has no "plan"')
    return problems


@frozen
class Entry:
    """One vector of a vector file, as read: its name (its id, or where it is when it has
    none), its source, the vector, and what stops it from being judged at all: the file
    could not be read (``unreadable``), or an earlier vector has its id (``duplicate_of``)."""

    name: str
    source: str
    vector: Any = None
    unreadable: str | None = None
    duplicate_of: str | None = None


def entries(paths: Sequence[str]) -> Iterator[Entry]:
    """Every vector under ``paths``, in order; a file that cannot be read is one entry."""
    seen: dict[str, str] = {}
    for path in find_vector_files(paths):
        try:
            vectors = load_vectors(path)
        except InputError as exc:
            yield Entry(name=path, source=path, unreadable=str(exc))
            continue
        for vector, source in vectors:
            vid = vector.get("id") if isinstance(vector, Mapping) else None
            name = vid if isinstance(vid, str) and vid else source
            yield Entry(name, source, vector, duplicate_of=seen.get(name))
            seen.setdefault(name, source)


def check_entry(entry: Entry, implementation: Implementation) -> Verdict:
    """How ``entry`` fares on ``implementation``; never raises: whatever a vector holds,
    the others are still judged."""
    if entry.unreadable is not None:
        return Verdict((entry.unreadable,))
    try:
        verdict = judge(entry.vector, implementation)
    except Exception as exc:  # a vector never stops the others, whatever it holds
        verdict = Verdict((f"the runner could not check this vector ({type(exc).__name__}: "
                           f"{exc}); this is a bug in obelisk or a vector shape it does "
                           "not recognise",))
    if entry.duplicate_of is not None:
        return Verdict((f"duplicate id (also in {entry.duplicate_of})", *verdict.problems),
                       verdict.unsupported)
    return verdict


def run(paths: Sequence[str], interpreter: str = "sync",
        implementation: Implementation | None = None) -> tuple[list[Outcome], list[str]]:
    """Check every vector under ``paths`` on ``implementation`` (obelisk itself in process
    when None). Returns outcomes and unreadable-file problems."""
    implementation = implementation or Local(interpreter)
    outcomes = []
    for entry in entries(paths):
        verdict = check_entry(entry, implementation)
        outcomes.append(Outcome(id=entry.name, source=entry.source, problems=verdict.problems,
                                unsupported=verdict.unsupported))
    return outcomes, []
