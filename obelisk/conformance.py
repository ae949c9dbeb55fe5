"""The conformance runner, kept importable by its first name: it lives in
:mod:`obelisk.kit.conformance` (and its judging rules in :mod:`obelisk.kit.judge`)."""

from __future__ import annotations

from obelisk.kit.conformance import (
    Implementation,
    Local,
    Outcome,
    Verdict,
    check_case,
    check_plan,
    check_vector,
    context_of_views,
    find_vector_files,
    json_equal,
    judge,
    judge_case,
    load_vectors,
    needed_ops,
    run,
)

__all__ = [
    "Implementation", "Local", "Outcome", "Verdict", "check_case", "check_plan",
    "check_vector", "context_of_views", "find_vector_files", "judge", "judge_case",
    "json_equal", "load_vectors", "needed_ops", "run",
]
