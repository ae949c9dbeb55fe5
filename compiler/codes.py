"""Every diagnostic code obelisk reports, with its severity and a one-line help, in one table.

The first fourteen codes are the protocol's own (every conforming compiler reports them);
the rest are obelisk's. Adding a diagnostic starts with one row here.
"""

from __future__ import annotations

import enum
from types import MappingProxyType


class Severity(str, enum.Enum):
    """How bad a diagnostic is. Only errors stop a plan from running."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class DiagnosticCode(str, enum.Enum):
    """A diagnostic code: its name (the value), its :attr:`severity` and its :attr:`help`.

    A member is a ``str`` equal to its name: it compares, hashes, formats and serialises
    as the plain code (``"cycle"``), so a code can be used wherever a string was.
    """

    severity: Severity
    help: str

    def __new__(cls, value: str, severity: Severity, help: str) -> DiagnosticCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.severity = severity
        member.help = help
        return member

    # Behave as the plain string everywhere text is made (Enum would print the member's
    # qualified name, and hash its name instead of its value).
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    # -- the protocol's codes ----------------------------------------------------------
    SYNTAX = ("syntax", Severity.ERROR,
              "An expression does not parse, or exceeds the length or nesting limit.")
    UNKNOWN_TOOL = ("unknown-tool", Severity.ERROR,
                    "_tool is missing, not a string, or not one of the given tools.")
    PARAM_SCHEMA = ("param-schema", Severity.ERROR,
                    "A literal parameter violates the tool's schema, or a required one is "
                    "absent.")
    INVALID_OUTPUT_METHOD = ("invalid-output-method", Severity.ERROR,
                             "_outputMethod is not set, merge, assign, push or concat.")
    INVALID_OUTPUT_TARGET = ("invalid-output-target", Severity.ERROR,
                             "An output path targets a kind that cannot hold data.")
    DANGLING_REFERENCE = ("dangling-reference", Severity.ERROR,
                          "A read that nothing writes and the context does not provide.")
    CYCLE = ("cycle", Severity.ERROR, "Calls that depend on each other in a loop.")
    UNKNOWN_FIELD = ("unknown-field", Severity.WARNING,
                     "A read names a key the producer's schema does not declare, or reads "
                     "below a value it declares as an array or a scalar (an error when the "
                     "schema forbids other keys).")
    TYPE_MISMATCH = ("type-mismatch", Severity.ERROR,
                     "The known type at a read path cannot meet the parameter's type.")
    WRITE_RACE = ("write-race", Severity.WARNING,
                  "Unordered calls, not on exclusive branches, write overlapping paths.")
    UNREACHABLE = ("unreachable", Severity.WARNING,
                   "A call requires two alternatives of the same branching output.")
    SCOPE_RACE = ("scope-race", Severity.WARNING,
                  "What _scopes shows a call depends on the timing of other calls.")
    EXTERNAL_REFERENCE = ("external-reference", Severity.INFO,
                          "An input reference to be supplied at run time.")
    INVALID_SCOPE = ("invalid-scope", Severity.ERROR,
                     "_scopes names a message type that holds no data (system, tool, ...).")
    # -- obelisk's own -----------------------------------------------------------------
    INVALID_CALL = ("invalid-call", Severity.ERROR, "A call is not a JSON object.")
    INVALID_META = ("invalid-meta", Severity.ERROR,
                    "_instance or _scopes has the wrong shape, or a call sets a meta-property "
                    "only the engine sets.")
    NO_INSTANCES = ("no-instances", Severity.INFO,
                    "Instancing was asked for, but the context names no instance.")
    TOO_MANY = ("too-many", Severity.INFO, "A kind of diagnostic was cut short.")
    TOO_DENSE = ("too-dense", Severity.ERROR,
                 "The plan has more dependencies between calls than the compiler's limit.")
    CONFUSABLE_KIND = ("confusable-kind", Severity.WARNING,
                       "A kind name looks like another kind's but is spelt with other "
                       "characters.")
    SLOW_PATTERN = ("slow-pattern", Severity.WARNING,
                    "A tool's pattern can take exponential time in a backtracking engine "
                    "(obelisk matches it in linear time).")
    UNCHECKED_PATTERN = ("unchecked-pattern", Severity.WARNING,
                         "A tool's pattern uses what the linear-time matcher cannot take "
                         "(backreferences, lookaround): values are not checked against it.")
    NO_TOOLS = ("no-tools", Severity.INFO,
                "No tools were given, so tool names and parameters were not checked: give "
                "--tools FILE or a `tools` list in the plan file.")


#: Code -> severity, in the table's order (the protocol's fourteen first); read-only.
CODES: MappingProxyType[str, Severity] = MappingProxyType(
    {code.value: code.severity for code in DiagnosticCode})


_BY_NAME: dict[str, DiagnosticCode] = {str(code): code for code in DiagnosticCode}


def code_of(name: str) -> DiagnosticCode:
    """The code named ``name``; raises KeyError for a name that is not in the table (a
    diagnostic with an unknown code is a bug in obelisk, not in a plan)."""
    return _BY_NAME[name]
