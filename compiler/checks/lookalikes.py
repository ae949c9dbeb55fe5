"""Look-alikes: kind names spelt with other scripts' letters, and tool patterns that can
backtrack catastrophically.

``†ѕtate`` (with a Cyrillic ``ѕ``) is a kind of its own, not ``†state``: a plan can read
or write it unnoticed by a reviewer. A kind whose *skeleton* (compatibility-normalised,
accents removed, look-alike letters of Cyrillic and Greek mapped to Latin) equals that of
another kind in the plan or context, or of a standard kind, gets a ``confusable-kind``
warning. A tool's ``pattern`` with a quantifier inside a quantified group (``(a+)+``)
can take exponential time to reject a string: it gets a ``slow-pattern`` warning when the
tools are loaded, unless each repetition starts with a character the inner quantifier
cannot match (``( [A-Z][a-z]*)*`` is fine).
"""

from __future__ import annotations

import importlib
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

from pyrsistent import PMap, PVector

from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.plangraph import PlanGraph
from obelisk.core.messages import NON_DATA_KINDS, PAYLOAD_KEYS

#: The kinds every plan may meet: the protocol's data kinds and message types.
STANDARD_KINDS = frozenset({*PAYLOAD_KEYS, *NON_DATA_KINDS})

# Letters of other scripts drawn like Latin ones (the common homoglyphs of Unicode's
# confusables list for Cyrillic and Greek).
_LOOK_ALIKES = str.maketrans({
    **dict(zip("аеорсухѕіјԁһӏԛԝвкмнт", "aeopcyxsijdhlqwbkmht", strict=True)),
    **dict(zip("АВЕЅІЈКМНОРСТХУ", "ABESIJKMHOPCTXY", strict=True)),
    **dict(zip("αοιρνκτυχ", "aoipvktux", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
    "ı": "i", "ȷ": "j", "ℓ": "l", "ɡ": "g",
})


def skeleton(name: str) -> str:
    """What a name looks like: NFKD, combining marks dropped, look-alikes mapped."""
    decomposed = unicodedata.normalize("NFKD", name)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return plain.translate(_LOOK_ALIKES)


def check_confusable_kinds(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``confusable-kind`` warning at each place a plan names a non-ASCII kind that
    looks like another kind (of the plan, the context, or the standard ones)."""
    # Only a non-ASCII kind is reported, so only those uses are kept (and sorted); every
    # kind counts as a look-alike target. Kinds are few: most plans have no non-ASCII one.
    uses: dict[tuple[int, str, str], str | None] = {}  # (call, pointer, kind) -> tool
    kinds: set[str] = set()
    for node in graph.nodes:
        if node.output is not None:
            for target in node.output.targets:
                _note(uses, kinds, node.index, "/_outputPath", target.kind, node.tool)
        for param in node.params:
            for read in param.reads:
                _note(uses, kinds, node.index, param.pointer, read.reference.kind, node.tool)
        for kind in node.scopes:
            _note(uses, kinds, node.index, "/_scopes", kind, node.tool)
    if not uses:
        return
    kinds |= set(graph.context.kinds) | STANDARD_KINDS
    by_skeleton: dict[str, set[str]] = {}
    for kind in kinds:
        by_skeleton.setdefault(skeleton(kind), set()).add(kind)
    for (call, pointer, kind), tool in sorted(uses.items(), key=lambda u: u[0]):
        others = sorted(by_skeleton[skeleton(kind)] - {kind}, key=lambda k: (not k.isascii(), k))
        if others:
            yield Diagnostic(
                "confusable-kind",
                f"kind {ascii(kind)[1:-1]} looks like {ascii(others[0])[1:-1]} but is spelt "
                "with other characters, so it is a different kind",
                call=call, tool=tool, pointer=pointer,
                hint=f"spell it {others[0]} if that is meant, or choose a name that "
                     "cannot be mistaken for it")


def _note(uses: dict[tuple[int, str, str], str | None], kinds: set[str], call: int,
          pointer: str, kind: str, tool: str | None) -> None:
    kinds.add(kind)
    if not kind.isascii():
        uses.setdefault((call, pointer, kind), tool)


def check_slow_patterns(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``slow-pattern`` warning for each tool ``pattern`` that can backtrack
    catastrophically (only when tools were given)."""
    if graph.tools is None:
        return
    for tool in graph.tools:
        for pointer, pattern in _patterns(tool.schema, ""):
            if _catastrophic(pattern):
                yield Diagnostic(
                    "slow-pattern",
                    f"tool {tool.name}: the pattern at {pointer} ({pattern!r}) repeats a group "
                    "that itself repeats, so checking a long string against it can take "
                    "exponential time",
                    tool=tool.name,
                    hint="remove the inner or the outer quantifier (for example (a+)+ is a+), "
                         "or start each repetition with a character the inner one cannot "
                         "match")


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


def _catastrophic(pattern: str) -> bool:
    """Whether an unbounded repeat holds an unbounded repeat, with nothing that marks
    where each repetition starts."""
    try:
        parsed = _parser.parse(pattern)
    except Exception:  # noqa: BLE001 - an invalid pattern is the schema check's business
        return False
    return _nested(list(parsed), outer=False)


def _nested(items: list[Any], outer: bool) -> bool:
    for op, av in items:
        if op in _REPEATS and op is not None:
            _, high, body = av
            body = list(body)
            if high == _c.MAXREPEAT or high > 100:  # unbounded, or as good as
                if outer:
                    return True
                if _nested(body, outer=True) and not _delimited(body):
                    return True
            if _nested(body, outer):
                return True
        elif op == _c.SUBPATTERN:
            if _nested(list(av[-1]), outer):
                return True
        elif op == _c.BRANCH and any(_nested(list(alt), outer) for alt in av[1]):
            return True
    return False


def _delimited(body: list[Any]) -> bool:
    """The body starts with one required character that no repeated atom in it can match
    (so repetitions cannot trade characters)."""
    while body and body[0][0] == _c.SUBPATTERN:
        body = list(body[0][1][-1])
    if not body or body[0][0] not in (_c.LITERAL, _c.IN):
        return False
    first = _charset(body[0])
    if first is None:
        return False
    repeated: set[int] = set()
    for op, av in body[1:]:
        if op in _REPEATS and op is not None:
            for atom in av[2]:
                chars = _charset(atom)
                if chars is None:
                    return False
                repeated |= chars
    return not first & repeated


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
