"""Seeded defect (`||`): `null` counts as present, so `†state.a || 'x'` is null when
†state.a holds null (the protocol takes the next operand: present means neither MISSING
nor null). `&&` stays right."""

from typing import Any

from _wrap import serve_with

from obelisk.core import resolve as reading
from obelisk.core.ast import Or
from obelisk.core.values import MISSING
from obelisk.interpreters import machine

right = reading.evaluate


def evaluate(expr: Any, lookup: Any) -> Any:
    if isinstance(expr, Or):
        values = [evaluate(op, lookup) for op in expr.operands]
        return next((v for v in values if v is not MISSING), MISSING)
    return right(expr, lookup)


# Every reader of expressions (resolve, and the run's parameters) takes the defect.
reading.evaluate = machine.evaluate = evaluate
serve_with()
