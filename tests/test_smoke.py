"""The README's promises, end to end through the command line."""

import pathlib

import pytest
from clirun import cli as run

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_resolve_example() -> None:
    code, out, _ = run("resolve", str(ROOT / "examples/context.json"), "†state.user.status")
    assert (code, out) == (0, '"inactive"\n')


@pytest.mark.slow
def test_conformance_vectors_pass() -> None:
    code, out, _ = run("conformance", str(ROOT / "tests/conformance"))
    assert code == 0, out
    assert out.splitlines()[-1].endswith(" 0 failed")
