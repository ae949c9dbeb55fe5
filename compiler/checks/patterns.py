"""Tool patterns: those obelisk cannot check, and those that backtrack in other engines.

obelisk matches every ``pattern`` (and ``patternProperties`` key) in linear time with
RE2 (:mod:`obelisk.compiler.patterns`). A pattern RE2 cannot take (a backreference,
lookaround, ``\\Z``, a repetition over 1000) is not checked at all, and gets an
``unchecked-pattern`` warning: values that should fail it pass.

A pattern that RE2 matches in linear time may still take exponential time in a
backtracking engine (Python's ``re``, JavaScript's): the same schema is read by the LLM
provider's structured-output check, by other implementations of the protocol, by your
own code. It gets a ``slow-pattern`` warning: a repeated group that itself repeats
(``(a+)+``), alternatives that can match the same text inside a repetition
(``(a|aa)+``), or bounded repetitions nested to more than 100 ways of splitting a string
(``(a{1,30}){1,30}``); unless each repetition starts with a character nothing variable
in it can match (``( [A-Z][a-z]*)*`` is fine). Both are decided from the pattern alone:
no clock, so the diagnostics never depend on the machine's load.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Iterator
from typing import Any

from pyrsistent import PMap, PVector

from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.patterns import unsupported
from obelisk.compiler.plangraph import PlanGraph

__all__ = ["check_slow_patterns", "check_unchecked_patterns"]


def check_unchecked_patterns(graph: PlanGraph) -> Iterator[Diagnostic]:
    """An ``unchecked-pattern`` warning for each tool pattern RE2 cannot take (only when
    tools were given)."""
    if graph.tools is None:
        return
    for tool in graph.tools:
        for pointer, pattern in _patterns(tool.schema, ""):
            reason = unsupported(pattern)
            if reason is not None:
                yield Diagnostic(
                    "unchecked-pattern",
                    f"tool {tool.name}: the pattern at {pointer} ({pattern!r}) is not checked: "
                    f"the linear-time matcher cannot take it ({reason}), and obelisk never "
                    "runs a pattern in a backtracking engine, so every value passes it",
                    tool=tool.name,
                    hint="rewrite it without backreferences, lookaround or \\Z (\\z is the "
                         "end of the text), or check the value in the activity")


def check_slow_patterns(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``slow-pattern`` warning for each tool ``pattern`` that can backtrack
    catastrophically in a backtracking engine (only when tools were given)."""
    if graph.tools is None:
        return
    for tool in graph.tools:
        for pointer, pattern in _patterns(tool.schema, ""):
            if _catastrophic(pattern):
                yield Diagnostic(
                    "slow-pattern",
                    f"tool {tool.name}: the pattern at {pointer} ({pattern!r}) repeats what can "
                    "match the same text in several ways, so a backtracking engine (Python's "
                    "re, JavaScript's) can take exponential time on a long string; obelisk "
                    "matches it in linear time, but other readers of this schema may not",
                    tool=tool.name,
                    hint="remove the inner or the outer quantifier (for example (a+)+ is a+), "
                         "make the alternatives start differently, or start each repetition "
                         "with a character the inner one cannot match")


#: Keywords whose values are data, not schemas: a "pattern" inside them is a value.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _patterns(schema: Any, pointer: str) -> Iterator[tuple[str, str]]:
    if isinstance(schema, PVector):
        for i, item in enumerate(schema):
            yield from _patterns(item, f"{pointer}/{i}")
    if not isinstance(schema, PMap):
        return
    for key, value in sorted(schema.items()):
        where = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
        if key == "pattern" and isinstance(value, str):
            yield where, value
        elif key == "patternProperties" and isinstance(value, PMap):
            for regex in sorted(value):
                yield f"{where}/{regex}", regex
            yield from _patterns(value, where)
        elif key not in _DATA_KEYWORDS:
            yield from _patterns(value, where)


# The regular-expression parser of the standard library (private, but stable in shape).
try:
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _parser = importlib.import_module("sre_parse")
_c: Any = _parser  # the opcode names live beside the parser
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None))

#: More ways than this to split a string between nested repetitions is as good as
#: unbounded (``(a{1,30}){1,30}``: 900).
_WAYS = 100
_UNBOUNDED = float("inf")


def _catastrophic(pattern: str) -> bool:
    """Whether a repetition holds alternatives that can match the same text, or a
    variable repetition with nothing that marks where each repetition starts."""
    try:
        parsed = _parser.parse(pattern)
    except Exception:  # noqa: BLE001 - an invalid pattern is the schema check's business
        return False
    return _nested(list(parsed), outer=1) is not _Found.NOTHING


class _Found(enum.Enum):
    NOTHING = 0
    VARIABLE = 1  # a variable repetition in a repetition: unless the outer one is delimited
    AMBIGUOUS = 2  # alternatives that start alike, in a repetition: whatever delimits it


def _nested(items: list[Any], outer: float) -> _Found:
    """What makes ``items`` slow to backtrack over; ``outer``: how many times the
    enclosing repetitions repeat what is here, at most (1: not in a repetition)."""
    for op, av in items:
        found = _Found.NOTHING
        if op in _REPEATS and op is not None:
            low, high, body = av
            body = list(body)
            times = _UNBOUNDED if high == _c.MAXREPEAT else high
            if outer > 1 and low != high and outer * times > _WAYS:
                return _Found.VARIABLE  # a variable repetition inside a repetition: (a+)+
            found = _nested(body, outer * max(times, 1))
            if found is _Found.VARIABLE and times > 1 and _delimited(body):
                found = _Found.NOTHING
        elif op == _c.SUBPATTERN:
            found = _nested(list(av[-1]), outer)
        elif op == _c.BRANCH:
            alternatives = [list(alt) for alt in av[1]]
            if outer > _WAYS and _overlapping(alternatives):
                return _Found.AMBIGUOUS  # (a|aa)+
            for alternative in alternatives:
                found = _nested(alternative, outer)
                if found is not _Found.NOTHING:
                    break
        if found is not _Found.NOTHING:
            return found
    return _Found.NOTHING


def _overlapping(alternatives: list[list[Any]]) -> bool:
    """Whether two alternatives can start with the same character (unknown: they can)."""
    seen: set[int] = set()
    for alternative in alternatives:
        first = _first(alternative)
        if first is None or first & seen:
            return True
        seen |= first
    return False


def _first(items: list[Any]) -> set[int] | None:
    """The characters ``items`` can start with (None: unknown, or it can be empty)."""
    while items and items[0][0] == _c.SUBPATTERN:
        items = list(items[0][1][-1])
    if not items:
        return None
    op, av = items[0]
    if op in _REPEATS and op is not None and av[0] >= 1:
        return _first(list(av[2]))
    return _charset(items[0])


def _delimited(body: list[Any]) -> bool:
    """The body starts with one required character that nothing variable in it (a
    repeated atom, an alternative) can match, so repetitions cannot trade characters."""
    while body and body[0][0] == _c.SUBPATTERN:
        body = list(body[0][1][-1])
    if not body or body[0][0] not in (_c.LITERAL, _c.IN):
        return False
    first = _charset(body[0])
    variable = _variable_chars(body[1:], variable=False)
    return first is not None and variable is not None and not first & variable


def _variable_chars(items: list[Any], variable: bool) -> set[int] | None:
    """The characters the atoms of ``items`` inside a repetition or an alternative can
    match (``variable``: ``items`` are such a part already); None: unknown."""
    found: set[int] = set()
    for op, av in items:
        inner: list[list[Any]] = []
        if op in _REPEATS and op is not None:
            inner, inside = [list(av[2])], True
        elif op == _c.BRANCH:
            inner, inside = [list(alt) for alt in av[1]], True
        elif op == _c.SUBPATTERN:
            inner, inside = [list(av[-1])], variable
        elif variable:
            chars = _charset((op, av))
            if chars is None:
                return None
            found |= chars
            continue
        for part in inner:
            chars = _variable_chars(part, inside)
            if chars is None:
                return None
            found |= chars
    return found


_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": lambda c: c.isdigit(), "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_SPACE": lambda c: c.isspace(),
}


def _charset(item: tuple[Any, Any]) -> set[int] | None:
    """The ASCII characters one atom matches (None when it is not a simple atom or may
    match beyond ASCII in a way that matters)."""
    op, av = item
    if op == _c.LITERAL:
        return {av}
    if op != _c.IN:
        return None
    found: set[int] = set()
    for kind, arg in av:
        if kind == _c.LITERAL:
            found.add(arg)
        elif kind == _c.RANGE:
            found.update(range(arg[0], min(arg[1], 127) + 1))
        elif kind == _c.CATEGORY and str(arg) in _CATEGORIES:
            test = _CATEGORIES[str(arg)]
            found.update(c for c in range(128) if test(chr(c)))
        else:
            return None  # a negated set, another category: assume the worst
    return found
