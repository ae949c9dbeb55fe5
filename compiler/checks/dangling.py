"""Dangling references: a read that nothing writes and the context does not provide.

A read of ``input`` that no call writes is an *external* reference instead (an input to
be supplied at run time) when the context has no input message, or one whose schema
declares the path. An ``||`` with a literal or a satisfied operand does not dangle.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping

from obelisk.compiler.checks.hints import Hints
from obelisk.compiler.diagnostics import Diagnostic, ReferenceDetails
from obelisk.compiler.nodes import Node, Param, Read
from obelisk.compiler.plangraph import Inputs, PlanGraph
from obelisk.core.ast import And, Expr, Literal, Or, Reference
from obelisk.core.paths import overlaps


class Verdict(enum.Enum):
    """What a compile can say about one read."""

    OK = "ok"  # a call writes it, or the context provides it
    EXTERNAL = "external"  # an input to be supplied at run time
    DANGLING = "dangling"  # nothing will ever provide it


def check_dangling(graph: PlanGraph) -> Iterator[Diagnostic]:
    """``dangling-reference`` errors and ``external-reference`` infos, by node."""
    if graph.too_dense:
        return  # not linked: too-dense is the one error about the plan's reads
    hints = Hints(graph)
    for node in graph.nodes:
        for param in node.params:
            if all(read.writers or read.provided for read in param.reads):
                continue  # every verdict is OK: nothing dangles, nothing is external
            verdict = {read.reference: _verdict(read, graph.inputs) for read in param.reads}
            for ref in _culprits(param.expr, verdict):
                own = _own_write(node, ref)
                if own is not None:
                    # Only the call itself writes it: a call never waits for itself, so
                    # the value has to be there before it starts.
                    yield node.diagnostic(
                        "dangling-reference",
                        f"{ref} is read here, but only this call writes it (its _outputPath "
                        f"writes {own}): a call "
                        "cannot wait for its own output (a self-cycle), and the context "
                        "does not provide it",
                        **_where(param, ref),
                        hint=f"give {ref} a starting value in the context, or read it from "
                             "another call's output",
                        details=ReferenceDetails(node.id, str(ref)),
                    )
                    continue
                yield node.diagnostic(
                    "dangling-reference",
                    f"{ref} is read here, but no call writes it and the "
                    "context does not provide it",
                    **_where(param, ref), hint=hints.near_miss(ref, node.instance),
                    details=ReferenceDetails(node.id, str(ref)),
                )
            for read in param.reads:
                if verdict[read.reference] is Verdict.EXTERNAL:
                    yield node.diagnostic(
                        "external-reference",
                        f"{read.reference} is an input to be supplied at run time",
                        **_where(param, read.reference),
                        details=ReferenceDetails(node.id, str(read.reference)),
                    )


def _own_write(node: Node, ref: Reference) -> str | None:
    """The node's own output target that overlaps ``ref`` (as text), or None."""
    if node.output is None:
        return None
    return next((str(t) for t in node.output.targets
                 if t.kind == ref.kind and overlaps(t.path, ref.path)), None)


def _where(param: Param, ref: Reference) -> dict[str, object]:
    return {"pointer": param.pointer, "expression": param.text, "span": ref.span}


def _verdict(read: Read, inputs: Inputs) -> Verdict:
    ref = read.reference
    if read.writers or read.provided:
        return Verdict.OK
    if ref.kind == "input":
        declared = inputs.declaring(ref.path) is not None
        return Verdict.EXTERNAL if (not inputs.present or declared) else Verdict.DANGLING
    return Verdict.DANGLING


def _culprits(expr: Expr, verdict: Mapping[Reference, Verdict]) -> list[Reference]:
    """The dangling references that make ``expr`` dangle, left to right: none when it is
    satisfied, and none inside a satisfied operand (``†a`` in ``(†a || 'x') && †b``)."""
    if _satisfied(expr, verdict):
        return []
    match expr:
        case Reference():
            return [expr]
        case Or(operands=ops) | And(operands=ops):
            return [ref for op in ops for ref in _culprits(op, verdict)]
    return []  # pragma: no cover - a literal is always satisfied


def _satisfied(expr: Expr, verdict: Mapping[Reference, Verdict]) -> bool:
    # An || with a literal or one provided alternative does not dangle; an && dangles when
    # any operand does.
    match expr:
        case Reference():
            return verdict[expr] is not Verdict.DANGLING
        case Literal():
            return True
        case Or(operands=ops):
            return any(_satisfied(op, verdict) for op in ops)
        case And(operands=ops):
            return all(_satisfied(op, verdict) for op in ops)
    return True  # pragma: no cover
