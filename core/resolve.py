"""Reading: the value of an expression for a context and an optional instance (§3, §4).

:func:`evaluate` walks an input expression; references are looked up through the
context's materialised views. :func:`fold_value` is the definition those views must agree
with: the plain fold of every write in context order, global layer first, then the
instance's. It is O(n) per read and exists to be the contract (property tests compare the
two), not to be fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from obelisk.core.ast import And, Expr, Literal, Or, Reference
from obelisk.core.context import Context
from obelisk.core.errors import WriteError
from obelisk.core.messages import normalise
from obelisk.core.methods import apply_write
from obelisk.core.paths import Path, get_in
from obelisk.core.values import MISSING, Frozen, Missing, freeze, present

Lookup = Callable[[Reference], "Frozen | Missing"]


def evaluate(expr: Expr, lookup: Lookup) -> Frozen | Missing:
    """The value of an input expression, reading references through ``lookup``.

    ``a || b``: the first present operand (neither MISSING nor null), else MISSING.
    ``a && b``: the last operand when every one is present, else MISSING.
    """
    match expr:
        case Reference():
            # †kind.path: the folded value at the path.
            return lookup(expr)
        case Literal(value=value):
            # 'text', 12, true, null: itself.
            return value
        case Or(operands=operands):
            # a || b: first present operand. Every operand is read, so that a broken
            # write in any of them is reported rather than masked by evaluation order.
            values = [evaluate(op, lookup) for op in operands]
            return next((v for v in values if present(v)), MISSING)
        case And(operands=operands):
            # a && b: the last, when all are present.
            values = [evaluate(op, lookup) for op in operands]
            return values[-1] if all(present(v) for v in values) else MISSING
    raise TypeError(f"not an expression: {expr!r}")  # pragma: no cover


def lookup_in(context: Context, instance: str | None = None) -> Lookup:
    """A lookup reading references from ``context``'s views, for ``instance``."""
    return lambda ref: context.value(ref.kind, ref.path, instance)


def fold_value(
    messages: Iterable[Any], kind: str, path: Path, instance: str | None = None
) -> Frozen | Missing:
    """The definition of ``†kind.path``: fold every write of ``kind`` from MISSING.

    Global writes first in context order, then (when ``instance`` is given) that
    instance's writes in context order; then take the value at ``path``. Raises
    :class:`WriteError` naming the message whose write cannot be applied.
    """
    writes = []
    for index, message in enumerate(messages):
        write = normalise(freeze(message), checked=True)
        if write is not None and write.kind == kind:
            writes.append((index, write))
    layers = [w for w in writes if w[1].instance is None]
    if instance is not None:
        layers += [w for w in writes if w[1].instance == instance]
    root: Frozen | Missing = MISSING
    for index, write in layers:
        try:
            root = apply_write(root, write.path, write.method, write.value)
        except WriteError as exc:
            raise exc.located(
                kind=kind, path=write.path, method=write.method.value,
                message_index=index, instance=write.instance,
            ) from None
    return get_in(root, path)
