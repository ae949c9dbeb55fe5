"""What a task is: tools with latencies, user turns of steps, and the known answers.

A step is one tool call, written once for every strategy: its arguments are literals or
:class:`Ref` (a result read from the state, by dotted path) or :class:`First` (the first
present of several results, for a fallback). A step's ``id`` is where its result goes
(``weather.paris``), so a :class:`Ref` of ``weather`` reads every ``weather.*`` step.
Each strategy then writes the same steps its own way (:mod:`schedule`): obelisk as
references, ReAct and LangGraph as the literal values the model has seen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import field, frozen

__all__ = ["FAILED", "First", "Ref", "Step", "Task", "Tool", "Turn", "lookup", "reads",
           "resolve", "store"]


@frozen
class Ref:
    """The result at ``path`` (dotted) of the state the steps write."""

    path: str


@frozen
class First:
    """The first of ``options`` that is present: a result, else its fallback's."""

    options: tuple[Ref, ...]


@frozen
class Step:
    """One call: ``tool`` with ``args``, its result at ``id``; ``after_failure`` names the
    step whose failure it answers (a fallback runs only then)."""

    id: str
    tool: str
    args: Mapping[str, Any]
    after_failure: str | None = None


@frozen
class Turn:
    """One user request: its ``question``, the ``steps`` that answer it (each after the
    steps it reads), the ``output`` template and the ``answer`` it must give."""

    question: str
    steps: tuple[Step, ...]
    output: Any
    answer: Any


@frozen
class Tool:
    """A tool: its schema's parts, its latency in seconds, and ``run``, the Python
    function that answers it (it may raise: the tool failed)."""

    name: str
    description: str
    params: Mapping[str, Any]
    latency: float | Callable[..., float] = field(eq=False)
    run: Callable[..., Any] = field(eq=False)

    def seconds(self, args: Mapping[str, Any]) -> float:
        """How long a call with ``args`` takes (a tool's latency may depend on them)."""
        return self.latency(**args) if callable(self.latency) else self.latency

    def schema(self) -> dict[str, Any]:
        """The tool as JSON Schema: its parameters, all required."""
        return {"type": "object", "description": self.description,
                "properties": dict(self.params), "required": list(self.params)}


@frozen
class Task:
    """A task: its ``name``, what it is ``like`` (the shape it stands for), its user
    turns, ``tools`` (a fresh environment each call: tools may keep state) and the steps
    whose tool ``fails`` (known, so each strategy's script can be written ahead)."""

    name: str
    like: str
    turns: tuple[Turn, ...]
    tools: Callable[[], tuple[Tool, ...]] = field(eq=False)
    fails: frozenset[str] = frozenset()


#: A step's result in the state when its tool failed.
FAILED = object()


def _overlaps(a: str, b: str) -> bool:
    pa, pb = a.split("."), b.split(".")
    return pa[:len(pb)] == pb or pb[:len(pa)] == pa


def reads(step: Step, among: tuple[Step, ...]) -> list[Step]:
    """The steps of ``among`` whose results ``step`` reads (or whose failure it answers)."""
    paths: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, Ref):
            paths.append(value.path)
        elif isinstance(value, First):
            paths.extend(ref.path for ref in value.options)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)

    collect(dict(step.args))
    return [other for other in among if other is not step
            and (other.id == step.after_failure or any(_overlaps(other.id, p) for p in paths))]


def lookup(state: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` in ``state``; raises ``KeyError`` when it is absent."""
    value: Any = state
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise KeyError(f"{path}: not in the results seen so far")
        value = value[key]
    if value is FAILED:
        raise KeyError(f"{path}: its tool failed")
    return value


def store(state: dict[str, Any], path: str, value: Any) -> None:
    """Put ``value`` at dotted ``path`` in ``state``, making the objects on the way."""
    *heads, last = path.split(".")
    for key in heads:
        state = state.setdefault(key, {})
    state[last] = value


def resolve(template: Any, state: Mapping[str, Any]) -> Any:
    """``template`` with every :class:`Ref` and :class:`First` replaced by its value."""
    if isinstance(template, Ref):
        return lookup(state, template.path)
    if isinstance(template, First):
        for ref in template.options:
            try:
                return lookup(state, ref.path)
            except KeyError:
                continue
        raise KeyError(f"none of {[r.path for r in template.options]} is present")
    if isinstance(template, Mapping):
        return {k: resolve(v, state) for k, v in template.items()}
    if isinstance(template, (list, tuple)):
        return [resolve(v, state) for v in template]
    return template
