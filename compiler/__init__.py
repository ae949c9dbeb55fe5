"""The compiler: the expression grammar and parser, tools, and the plan compiler."""

from obelisk.compiler.diagnostics import CODES, Diagnostic, DiagnosticCode, Severity, render_text
from obelisk.compiler.parse import (
    MAX_DEPTH,
    MAX_LENGTH,
    is_expression,
    parse_input,
    parse_output,
    parse_reference,
    unescape_literal,
)
from obelisk.compiler.plan import CompiledPlan, Edge, Node, PlanError, compile_plan
from obelisk.compiler.tools import Tool, ToolError, ToolRegistry, compose_calls_schema

__all__ = [
    "CODES", "MAX_DEPTH", "MAX_LENGTH", "CompiledPlan", "Diagnostic", "DiagnosticCode", "Edge",
    "Node", "PlanError", "Severity", "Tool", "ToolError", "ToolRegistry", "compile_plan",
    "compose_calls_schema", "is_expression", "parse_input", "parse_output",
    "parse_reference", "render_text", "unescape_literal",
]
