"""The functional core: JSON values, paths, messages, write methods, context, reading.

No I/O, no clock, no randomness, no asyncio here: those are passed in by the shell.
"""

# This folder is installed as obelisk.core; imported by its own name (possible from the
# repository root) it would load a second copy of every module, with its own MISSING.
if __name__ != "obelisk.core":
    raise ImportError(f"import obelisk.core, not {__name__}: the core/ folder is the "
                      f"package obelisk.core, and a second copy would not share its values")

from typing import TYPE_CHECKING

from obelisk.core.lazy import LazyExports

if TYPE_CHECKING:
    from obelisk.core.ast import And, Expr, FanOut, Literal, Or, OutputExpr, Reference, Span
    from obelisk.core.context import Context
    from obelisk.core.errors import ExpressionSyntaxError, MessageError, ObeliskError, WriteError
    from obelisk.core.messages import Write, normalise
    from obelisk.core.methods import Method, apply_write
    from obelisk.core.paths import Path, get_in, overlaps
    from obelisk.core.pathtext import render_reference
    from obelisk.core.plain import thaw
    from obelisk.core.resolve import evaluate, fold_value, lookup_in
    from obelisk.core.values import MISSING, Json, Missing, freeze, present

# Imported on first use: a module that needs one of these (the command line's error
# types) does not load the whole core with it.
_EXPORTS = LazyExports(globals(), {
    "obelisk.core.ast": ("And", "Expr", "FanOut", "Literal", "Or", "OutputExpr", "Reference",
                         "Span"),
    "obelisk.core.context": ("Context",),
    "obelisk.core.errors": ("ExpressionSyntaxError", "MessageError", "ObeliskError", "WriteError"),
    "obelisk.core.messages": ("Write", "normalise"),
    "obelisk.core.methods": ("Method", "apply_write"),
    "obelisk.core.paths": ("Path", "get_in", "overlaps"),
    "obelisk.core.pathtext": ("render_reference",),
    "obelisk.core.resolve": ("evaluate", "fold_value", "lookup_in"),
    "obelisk.core.plain": ("thaw",),
    "obelisk.core.values": ("MISSING", "Json", "Missing", "freeze", "present"),
})
__getattr__, __dir__ = _EXPORTS.getattr, _EXPORTS.dir

__all__ = [
    "MISSING", "And", "Context", "Expr", "ExpressionSyntaxError", "FanOut", "Json",
    "Literal", "MessageError", "Method", "Missing", "ObeliskError", "Or", "OutputExpr",
    "Path", "Reference", "Span", "Write", "WriteError", "apply_write", "evaluate",
    "fold_value", "freeze", "get_in", "lookup_in", "normalise", "overlaps", "present",
    "render_reference", "thaw",
]
