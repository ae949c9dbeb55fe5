"""Mocks for the dry run: one table of mock forms, each a check and an interpretation.

A mock is an object with exactly one form field (``{"return": ...}``, ``{"raise": ...}``,
``{"branch": "†state.x", "value": ...}``, ``{"echo": true}``, ``{"echo_scopes": true}``,
``{"sequence": [mock, ...]}``, ``{"by_instance": {"①": mock}}``), plus ``delay_ms``; or a
function with the activity signature. :data:`FORMS` maps each form's name to how it is
checked and what it makes of an invocation: adding a form is adding one row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import evolve, frozen

from obelisk.compiler.nodes import Node
from obelisk.core.context import Context
from obelisk.core.errors import MockError, WriteError
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.outcomes import Chose, Outcome, Raised, Returned

__all__ = ["FORMS", "MAX_DELAY_MS", "MockError", "MockForm", "Mocked", "check_mocks",
           "interpret"]

#: The longest ``delay_ms`` a mock may give, and the longest an invocation waits when
#: the delays of nested mocks add up: delays reorder an asyncio dry run, and a mock from
#: a plan, a vector or an agent file must not make one wait for hours.
MAX_DELAY_MS = 1000


@frozen
class Mocked:
    """What a mock makes of one invocation: an outcome (after ``delay`` seconds), or a
    function to call like an activity."""

    outcome: Outcome | None
    delay: float = 0.0
    function: Callable[..., Any] | None = None


@frozen
class Turn:
    """Which invocation this is: of the tool (``rank``) and of the tool for this instance
    (``instance_rank``), both from 0; a ``sequence`` mock picks its entry by it."""

    node: Node
    invocation: Invocation
    rank: int
    instance_rank: int


#: Checks a mock's form field: (the form's value, where it is) -> problems.
Check = Callable[[Any, str], list[str]]
#: Interprets a mock of this form for one invocation.
Interpret = Callable[[Mapping[str, Any], Turn], Mocked]


@frozen
class MockForm:
    """One mock form: how its field is checked, and what it makes of an invocation."""

    check: Check
    interpret: Interpret


# -- the forms, one check and one interpretation each -------------------------------------


def _check_return(value: Any, where: str) -> list[str]:
    return []  # {"return": any JSON}


def _return(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    return Mocked(Returned(mock["return"]))


def _check_raise(err: Any, where: str) -> list[str]:
    # {"raise": {"type": "E", "message": "...", "data": ...}}
    if not isinstance(err, Mapping) or not isinstance(err.get("type"), str):
        return [f"{where}.raise: an object with a string \"type\" and \"message\""]
    if not isinstance(err.get("message", ""), str):
        return [f"{where}.raise.message: a string"]
    return []


def _raise(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    err = mock["raise"]
    return Mocked(Raised(err["type"], err.get("message", err["type"]), err.get("data", MISSING)))


def _check_branch(path: Any, where: str) -> list[str]:
    # {"branch": "†state.error", "value": ...}
    if not isinstance(path, str) or not path.startswith("†"):
        return [f"{where}.branch: a reference naming one alternative, like \"†state.error\""]
    return []


def _branch(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    return Mocked(Chose(mock["branch"], mock.get("value")))


def _check_true(form: str) -> Check:
    # {"echo": true}, {"echo_scopes": true}
    def check(value: Any, where: str) -> list[str]:
        return [] if value is True else [f"{where}.{form}: true"]
    return check


def _echo(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    call = turn.invocation.call
    return Mocked(Returned({k: v for k, v in call.items() if not k.startswith("_")}))


def _echo_scopes(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    return Mocked(Returned(scopes_view(turn.invocation.context, turn.node.instance)))


def _check_sequence(seq: Any, where: str) -> list[str]:
    # {"sequence": [mock, mock, ...]}: one entry per invocation of the tool
    if not isinstance(seq, list) or not seq:
        return [f"{where}.sequence: a non-empty array of mocks"]
    return [p for i, item in enumerate(seq) for p in mock_problems(item, f"{where}.sequence[{i}]")]


def _sequence(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    seq = mock["sequence"]
    if turn.rank >= len(seq):
        return Mocked(Raised("NoMock", f"the sequence mock of {turn.node.tool!r} has {len(seq)} "
                             f"entries, but this is invocation number {turn.rank + 1} of that "
                             "tool", contract=True))
    return interpret(seq[turn.rank], turn)


def _check_by_instance(table: Any, where: str) -> list[str]:
    # {"by_instance": {"①": mock, "②": mock}}
    if not isinstance(table, Mapping):
        return [f"{where}.by_instance: an object of instance id -> mock"]
    return [p for key, item in table.items()
            for p in mock_problems(item, f"{where}.by_instance.{key}")]


def _by_instance(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    table = mock["by_instance"]
    if turn.node.instance not in table:
        return Mocked(Raised("NoMock", f"the by_instance mock of {turn.node.tool!r} has no "
                             f"entry for instance {turn.node.instance!r}", contract=True))
    # Below by_instance, a sequence counts this instance's invocations only.
    return interpret(table[turn.node.instance], evolve(turn, rank=turn.instance_rank))


#: Every mock form: name -> (check, interpret). The order is the one error texts list.
FORMS: Mapping[str, MockForm] = {
    "return": MockForm(_check_return, _return),
    "raise": MockForm(_check_raise, _raise),
    "branch": MockForm(_check_branch, _branch),
    "echo": MockForm(_check_true("echo"), _echo),
    "echo_scopes": MockForm(_check_true("echo_scopes"), _echo_scopes),
    "sequence": MockForm(_check_sequence, _sequence),
    "by_instance": MockForm(_check_by_instance, _by_instance),
}

#: Fields any form may carry besides its own.
_COMMON = ("value", "delay_ms")


# -- checking and interpreting ------------------------------------------------------------


def check_mocks(mocks: Mapping[str, Any]) -> None:
    """Raise :class:`MockError` unless every mock has a valid form (every problem listed)."""
    if not isinstance(mocks, Mapping):
        raise MockError(
            [f"mocks must be an object of tool name -> mock, got {type(mocks).__name__}"])
    problems: list[str] = []
    for tool, mock in mocks.items():
        if not callable(mock):
            problems.extend(mock_problems(mock, f"mocks.{tool}"))
    if problems:
        raise MockError(problems)


def mock_problems(mock: Any, where: str) -> list[str]:
    """What is wrong with one mock object (``where`` names it in the texts)."""
    if not isinstance(mock, Mapping):
        return [f"{where}: a mock is an object such as {{\"return\": ...}}"]
    forms = [k for k in FORMS if k in mock]
    problems = [f"{where}: unknown field {k!r}"
                for k in mock if k not in FORMS and k not in _COMMON]
    if len(forms) != 1:
        problems.append(f"{where}: give exactly one of {', '.join(FORMS)} (got {forms or 'none'})")
        return problems
    form = forms[0]
    delay = mock.get("delay_ms", 0)
    if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not (
            0 <= delay <= MAX_DELAY_MS):  # (NaN is neither)
        shown = repr(delay) if len(repr(delay)) <= 40 else repr(delay)[:39] + "…"
        problems.append(f"{where}.delay_ms: a number of milliseconds from 0 to "
                        f"{MAX_DELAY_MS}, got {shown}")
    if "value" in mock and form != "branch":
        problems.append(f"{where}: \"value\" goes with \"branch\" only")
    return problems + FORMS[form].check(mock[form], where)


def interpret(mock: Mapping[str, Any], turn: Turn) -> Mocked:
    """What a checked mock makes of one invocation; ``delay_ms`` adds up through nesting,
    to :data:`MAX_DELAY_MS` at most."""
    form = next(k for k in FORMS if k in mock)  # check_mocks ran first: exactly one
    mocked = FORMS[form].interpret(mock, turn)
    delay = float(mock.get("delay_ms", 0)) / 1000.0
    if not delay or (isinstance(mocked.outcome, Raised) and mocked.outcome.contract):
        return mocked  # a mock that has no entry for this turn fails at once
    return evolve(mocked, delay=min(mocked.delay + delay, MAX_DELAY_MS / 1000.0))


class Counts:
    """Counts a dry run's invocations per tool, and per tool and instance (for ``sequence``).

    A ``sequence`` mock gives its entries one per invocation, in the order the calls are
    invoked: a call that waits for another comes after it, and a skipped call takes no
    entry. Inside ``by_instance``, the count is per instance. The sync loop and the
    asyncio loop invoke calls in the same order unless mocks add ``delay_ms``. Each run
    has its own.
    """

    def __init__(self) -> None:
        self.per_tool: dict[str | None, int] = {}
        self.per_instance: dict[tuple[str | None, str | None], int] = {}

    def next(self, node: Node, invocation: Invocation) -> Turn:
        """The turn of this invocation, counted."""
        rank = self.per_tool.get(node.tool, 0)
        instance_rank = self.per_instance.get((node.tool, node.instance), 0)
        self.per_tool[node.tool] = rank + 1
        self.per_instance[(node.tool, node.instance)] = instance_rank + 1
        return Turn(node, invocation, rank, instance_rank)


def scopes_view(context: Context, instance: str | None) -> dict[str, Any]:
    """Every kind's value in a scoped context as ``instance`` reads it (``echo_scopes``)."""
    out: dict[str, Any] = {}
    for kind in context.kinds:
        try:
            value = context.value(kind, (), instance)
        except WriteError:
            continue
        if value is not MISSING:
            out[kind] = thaw(value)
    return out
