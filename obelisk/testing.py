"""Testing another implementation against obelisk from a pytest suite (``obelisk[testing]``).

The hypothesis strategies draw plain JSON cases (contexts, expressions, output paths,
mocks, plans) that any implementation can be given; :class:`Adapter` runs an
implementation that speaks the adapter protocol; :func:`assert_conforms` runs the bundled
vector pack and the differential fuzzer on it and fails with a ready-to-commit vector::

    from obelisk.testing import Adapter, assert_conforms

    def test_my_engine_conforms():
        with Adapter("./my-engine --adapter") as adapter:
            assert_conforms(adapter, examples=100, seed=0)

This module needs hypothesis; ``import obelisk`` never imports it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

try:
    import hypothesis  # noqa: F401 - imported first, to say how to install it when absent
except ImportError:  # tests/kit/test_kit_fuzz.py imports it without hypothesis
    raise ImportError("obelisk.testing needs hypothesis, which is not installed; install it "
                      "with pip install 'obelisk[testing]'") from None

from obelisk.kit import conformance, fuzz
from obelisk.kit.client import DEFAULT_TIMEOUT, AdapterClient
from obelisk.kit.pack import pack_dir
from obelisk.kit.planstrategies import mock_for, mocks, output_paths, plans
from obelisk.kit.protocol import Op
from obelisk.kit.strategies import (
    INSTANCES,
    KEYS,
    KINDS,
    METHODS,
    contexts,
    data_messages,
    expressions,
    json_values,
    resolve_cases,
)


class Adapter(AdapterClient):
    """An implementation speaking the adapter protocol, started from ``command`` (split
    like a shell line; no shell). Use it as a context manager; :meth:`ask` sends one
    request and returns the checked answer, raising ``AdapterError`` when there is none."""

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(command, timeout)

    def conformance(self, paths: Sequence[str] = ()) -> list[conformance.Outcome]:
        """Judge the vectors under ``paths`` (the bundled pack when empty) on this adapter."""
        outcomes, _ = conformance.run(list(paths) or [pack_dir()], implementation=self)
        return outcomes

    def fuzz(self, op: str, examples: int = fuzz.DEFAULT_EXAMPLES,
             seed: int = 0) -> fuzz.Difference | None:
        """The minimal case (shrunk) on which this adapter and obelisk differ, or None."""
        return fuzz.search(self, op, examples, seed)


def assert_conforms(adapter: Adapter, *, ops: Sequence[str] = fuzz.FUZZ_OPS,
                    vectors: bool | Sequence[str] = True, examples: int = 100,
                    seed: int = 0, strict: bool = False) -> None:
    """Fail (AssertionError) unless ``adapter`` passes the vectors and the fuzzer.

    ``vectors``: True for the bundled pack, a list of paths, or False to skip them.
    ``ops``: the ops to fuzz (those the adapter lists in ``hello``), ``examples`` cases
    each from ``seed``. ``strict`` also fails vectors that need an op the adapter lacks.
    The message holds every failing vector, or the minimal differing case as a vector.
    """
    if vectors is not False:
        paths = [] if vectors is True else list(vectors)
        outcomes = adapter.conformance(paths)
        failed = [o for o in outcomes if o.problems or (strict and o.unsupported)]
        if failed:
            lines = [f"{len(failed)} of {len(outcomes)} vectors failed on {adapter.command}:"]
            for outcome in failed[:20]:
                lines.append(f"FAIL {outcome.id} ({outcome.source})")
                lines.extend("  " + p for p in outcome.problems)
                if outcome.unsupported:
                    lines.append(f"  needs {', '.join(outcome.unsupported)}")
            raise AssertionError("\n".join(lines))
    for op in ops:
        if not adapter.supports(Op(op)):
            continue
        diff = adapter.fuzz(op, examples, seed)
        if diff is not None:
            raise AssertionError(
                f"{adapter.command} differs from obelisk on {op} (seed {seed}); the minimal "
                f"case as a vector:\n{json.dumps(diff.vector(), ensure_ascii=False, indent=2)}"
                f"\nobelisk answered: {json.dumps(diff.ours, ensure_ascii=False)}"
                f"\nthe adapter answered: {json.dumps(diff.theirs, ensure_ascii=False)}")


__all__ = [
    "INSTANCES",
    "KEYS",
    "KINDS",
    "METHODS",
    "Adapter",
    "assert_conforms",
    "contexts",
    "data_messages",
    "expressions",
    "json_values",
    "mock_for",
    "mocks",
    "output_paths",
    "plans",
    "resolve_cases",
]
