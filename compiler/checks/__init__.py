"""The checks over a plan's graph, listed in one table.

A check is a function from the :class:`~obelisk.compiler.plangraph.PlanGraph` to the
diagnostics it finds; it reads the graph and nothing else, and does not depend on the
other checks. The compiler runs every check of :data:`CHECKS` and sorts what they report,
so the table's order does not show in the output. To add a diagnostic: write the check
in the module of its family, add its row here and its code to
:class:`~obelisk.compiler.codes.DiagnosticCode`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from obelisk.compiler.checks.branches import check_unreachable
from obelisk.compiler.checks.cycles import check_cycles, check_density
from obelisk.compiler.checks.dangling import check_dangling
from obelisk.compiler.checks.fields import check_unknown_fields
from obelisk.compiler.checks.lookalikes import check_confusable_kinds
from obelisk.compiler.checks.patterns import check_slow_patterns, check_unchecked_patterns
from obelisk.compiler.checks.races import check_scope_races, check_write_races
from obelisk.compiler.checks.types import check_types
from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.plangraph import PlanGraph

#: A check: the graph in, its diagnostics out.
Check = Callable[[PlanGraph], Iterable[Diagnostic]]

#: Every check the compiler runs (codes each reports in the comment).
CHECKS: tuple[Check, ...] = (
    check_dangling,  # dangling-reference, external-reference
    check_cycles,  # cycle
    check_density,  # too-dense
    check_unreachable,  # unreachable
    check_write_races,  # write-race, too-many
    check_scope_races,  # scope-race, too-many
    check_types,  # type-mismatch
    check_unknown_fields,  # unknown-field
    check_confusable_kinds,  # confusable-kind
    check_slow_patterns,  # slow-pattern
    check_unchecked_patterns,  # unchecked-pattern
)

__all__ = ["CHECKS", "Check"]
