"""The compiler: the expression grammar and parser, tools, and the plan compiler."""

# This folder is installed as obelisk.compiler; imported by its own name (possible from the
# repository root) it would load a second copy of every module, with its own MISSING.
if __name__ != "obelisk.compiler":
    raise ImportError(f"import obelisk.compiler, not {__name__}: the compiler/ folder is the "
                      f"package obelisk.compiler, and a second copy would not share its values")

from obelisk.compiler.compose import compose_calls_schema
from obelisk.compiler.diagnostics import CODES, Diagnostic, DiagnosticCode, Severity, render_text
from obelisk.compiler.nodes import CompiledPlan, Edge, Node
from obelisk.compiler.parse import (
    MAX_DEPTH,
    MAX_LENGTH,
    is_expression,
    parse_input,
    parse_output,
    parse_reference,
    unescape_literal,
)
from obelisk.compiler.plan import compile_plan
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.errors import PlanError, ToolError

__all__ = [
    "CODES", "MAX_DEPTH", "MAX_LENGTH", "CompiledPlan", "Diagnostic", "DiagnosticCode", "Edge",
    "Node", "PlanError", "Severity", "Tool", "ToolError", "ToolRegistry", "compile_plan",
    "compose_calls_schema", "is_expression", "parse_input", "parse_output",
    "parse_reference", "render_text", "unescape_literal",
]
