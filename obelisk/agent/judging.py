"""Judging an answer (pure): first its shape, then each call on its own (§8.2 step 2).

An answer is *unusable* when it is not a JSON value at all (text that does not parse, a
refusal, an empty reply: :class:`obelisk.llm.answers.Unusable`) or nests deeper than
:data:`~obelisk.llm.answers.MAX_ANSWER_DEPTH` (checked before anything recursive reads
it). Its *shape* is wrong when it is not an object with ``calls`` (an array of objects)
and ``output`` (valid against the widened output schema), and nothing else. Either is an
``InvalidSolution`` and the tick ends.

A solution of the right shape has each call judged against the branch of the solution
schema its ``_tool`` selects (:meth:`Judge.call_problems`): a call that fails is marked
invalid in the compiled plan (:meth:`Judge.judged`), so it ends ``Invalid`` with the
errors in the compiler's words, and the other calls go on. A call the compiler already
finds wrong (an unknown tool, with its did-you-mean; a literal of the wrong type, naming
the parameter) keeps the compiler's diagnostics; the branch adds what only it checks. A
whole solution and a streamed one are judged by the same functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from attrs import evolve

from obelisk.agent.checks import error_message
from obelisk.compiler.codes import DiagnosticCode
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.patterns import linear_validator
from obelisk.compiler.validation import described, shorten
from obelisk.core.plain import thaw
from obelisk.llm.answers import MAX_ANSWER_DEPTH, Unusable, depth_over, parse_answer

__all__ = ["Judge", "Validators", "invalid_solution", "read_answer", "solution_error",
           "unusable_solution"]

#: How many characters of one validation message an InvalidSolution quotes.
MESSAGE_LIMIT = 200
#: How many validation errors an InvalidSolution lists.
ERROR_LIMIT = 10


def read_answer(value: Any) -> Any:
    """An adapter's answer as the loop judges it: a string is the LLM's raw text (parsed
    here), an :class:`Unusable` (also as a journal records it) stays one, a value nested
    too deep becomes one; any other value is returned as it is."""
    if isinstance(value, Unusable):
        return value
    if isinstance(value, str):
        return parse_answer(value)
    recorded = Unusable.of_json(value)
    if recorded is not None:
        return recorded
    if depth_over(value):
        return Unusable(f"the answer is nested more than {MAX_ANSWER_DEPTH} levels deep "
                        "(arrays and objects inside each other)")
    return value


def unusable_solution(answer: Unusable) -> dict[str, Any]:
    """The ``InvalidSolution`` error of an unusable answer: why, and an excerpt of it."""
    return error_message(
        "InvalidSolution", "the answer is not a usable solution: " + answer.describe()
        + '; answer with one JSON object {"calls": [...], "output": ...}',
        {"reason": answer.reason, "answer": answer.text})


def invalid_solution(problems: list[dict[str, str]]) -> dict[str, Any]:
    """The ``InvalidSolution`` error of a solution whose shape is wrong."""
    text = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in problems)
    return error_message("InvalidSolution", "the solution does not match the solution "
                         "schema: " + text, {"errors": list(problems)})


def solution_error(judge: Judge, answer: Any) -> dict[str, Any] | None:
    """The ``InvalidSolution`` error of an answer (read with :func:`read_answer`): an
    unusable one, or one whose shape is wrong; None for a solution of the right shape."""
    answer = read_answer(answer)
    if isinstance(answer, Unusable):
        return unusable_solution(answer)
    problems = judge.shape_problems(answer)
    return invalid_solution(problems) if problems else None


class Judge:
    """The checks of one solution schema: the shape (calls as any objects) and each
    tool's branch, each validator built on first use; patterns matched in linear time,
    since the LLM writes the strings."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        calls = dict(schema["properties"]["calls"])
        items = calls.get("items")
        self._branches: dict[str, Any] = {}
        if isinstance(items, Mapping) and isinstance(items.get("anyOf"), list):
            for branch in items["anyOf"]:
                self._branches[branch["properties"]["_tool"]["const"]] = branch
            calls["items"] = {"type": "object"}
        shape = {**schema, "properties": {**schema["properties"], "calls": calls}}
        self._shape = linear_validator()(shape)
        self._validators: dict[str, Any] = {}

    @classmethod
    def of_text(cls, schema_text: str) -> Judge:
        """The judge of a request's schema, from its text."""
        return cls(json.loads(schema_text))

    def shape_problems(self, answer: Any) -> list[dict[str, str]]:
        """The answer's shape problems (at most ten), ``{pointer, message}``, each message
        cut to a bounded length (the answer may be huge)."""
        errors = sorted(self._shape.iter_errors(answer), key=lambda e: list(e.absolute_path))
        return [{"pointer": "".join(f"/{p}" for p in e.absolute_path),
                 "message": shorten(e.message, MESSAGE_LIMIT)} for e in errors[:ERROR_LIMIT]]

    def call_problems(self, call: Any) -> list[tuple[str, str]]:
        """Where ``call`` breaks the branch its ``_tool`` selects, ``(pointer, message)``
        naming the parameter; none for a call of no known tool (the compiler says so)."""
        if not isinstance(call, Mapping):
            return []
        tool = call.get("_tool")
        if not isinstance(tool, str) or tool not in self._branches:
            return []
        validator = self._validators.get(tool)
        if validator is None:
            validator = self._validators[tool] = linear_validator()(self._branches[tool])
        found = described(list(validator.iter_errors(call)), "parameter")
        return [(pointer, shorten(message, MESSAGE_LIMIT))
                for pointer, message in sorted(set(found))[:ERROR_LIMIT]]

    def judged(self, plan: CompiledPlan, first: int = 0) -> CompiledPlan:
        """``plan`` with each call from index ``first`` on that breaks its branch marked
        invalid (a ``param-schema`` diagnostic per problem), unless the compiler found
        the call wrong already."""
        invalid = plan.invalid
        problems: dict[int, list[tuple[str, str]]] = {}
        for node in plan.nodes:
            if node.index < first or node.id in invalid:
                continue
            if node.index not in problems:
                problems[node.index] = self.call_problems(thaw(plan.calls[node.index]))
            found = problems[node.index]
            if found:
                invalid = invalid.set(node.id, tuple(
                    node.diagnostic(DiagnosticCode.PARAM_SCHEMA, message, pointer=pointer)
                    for pointer, message in found))
        return plan if invalid is plan.invalid else evolve(plan, invalid=invalid)


class Validators:
    """Solution and output validators, built once per schema text for the whole run (a
    run asks for the same solution schema tick after tick); their patterns are matched
    in linear time (:mod:`obelisk.compiler.patterns`), since the LLM writes the strings.
    ``judges`` holds a :class:`Judge` per solution schema text."""

    def __init__(self, output_schema: Any) -> None:
        self.judges: dict[str, Judge] = {}
        self.output = None if output_schema is None else linear_validator()(output_schema)

    def judge(self, schema_text: str) -> Judge:
        """The checks of the solution schema ``schema_text`` (built once per text)."""
        found = self.judges.get(schema_text)
        if found is None:
            found = self.judges[schema_text] = Judge.of_text(schema_text)
        return found

    def output_problems(self, value: Any) -> str:
        """The output's problems against the user's schema, as one text (empty: none)."""
        if self.output is None:
            return ""
        errors = sorted(self.output.iter_errors(value), key=lambda e: list(e.absolute_path))
        return "; ".join(f"{''.join(f'/{p}' for p in e.absolute_path) or '/'}: "
                         f"{shorten(e.message, 200)}" for e in errors[:5])
