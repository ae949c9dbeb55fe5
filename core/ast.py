"""The expression AST: frozen nodes that mirror the grammar's rules, each with its span.

Input expressions are :data:`Expr` trees (references, literals, ``||`` and ``&&``); output
expressions are an :class:`OutputExpr`: alternatives separated by ``||``, each a fan-out
group of references joined by ``&&``. Nodes hold no lark objects.
"""

from __future__ import annotations

from typing import TypeAlias

from attrs import frozen

from obelisk.core.paths import Path
from obelisk.core.pathtext import render_reference
from obelisk.core.values import Scalar


@frozen
class Span:
    """Character offsets ``[start, end)`` of a node in its expression text (0-based)."""

    start: int
    end: int

    @property
    def column(self) -> int:
        """The 1-based column of the first character."""
        return self.start + 1


@frozen
class Reference:
    """``†kind.seg.seg``: the value at ``path`` in data of ``kind``."""

    kind: str
    path: Path
    span: Span

    def __str__(self) -> str:
        return render_reference(self.kind, self.path)


@frozen
class Literal:
    """A JSON scalar written in the expression: 'text', "text", 12.5, true, false, null."""

    value: Scalar
    span: Span


@frozen
class Or:
    """``a || b || ...``: the first operand that is present, else MISSING."""

    operands: tuple[Expr, ...]
    span: Span


@frozen
class And:
    """``a && b && ...``: the last operand when every one is present, else MISSING."""

    operands: tuple[Expr, ...]
    span: Span


Expr: TypeAlias = Reference | Literal | Or | And


@frozen
class FanOut:
    """One alternative of an output expression: the same result goes to every target."""

    targets: tuple[Reference, ...]
    span: Span


@frozen
class OutputExpr:
    """A parsed ``_outputPath``: ``||``-separated alternatives of ``&&`` fan-out groups."""

    alternatives: tuple[FanOut, ...]
    span: Span

    @property
    def targets(self) -> tuple[Reference, ...]:
        """Every target of every alternative, in order."""
        alternatives = self.alternatives
        if len(alternatives) == 1:  # most outputs: that alternative's own tuple
            return alternatives[0].targets
        return tuple(t for alt in alternatives for t in alt.targets)


def references(expr: Expr) -> tuple[Reference, ...]:
    """Every reference an input expression reads, left to right."""
    out: list[Reference] = []
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        match node:
            case Reference():
                out.append(node)
            case Or(operands=ops) | And(operands=ops):
                stack.extend(reversed(ops))
            case Literal():
                pass
    return tuple(out)
