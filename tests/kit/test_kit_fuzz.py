"""`obelisk fuzz` and obelisk.testing: seeded defects are caught and shrunk; obelisk agrees
with itself; the core never imports hypothesis."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
from typing import Any

import pytest
from clirun import cli
from kit_helpers import OBELISK_ADAPTER, script

from obelisk.kit import local
from obelisk.kit.conformance import check_vector
from obelisk.kit.difference import compare, simplify
from obelisk.kit.fuzz import DEFAULT_EXAMPLES
from obelisk.testing import Adapter, assert_conforms

# (defect adapter, op fuzzed, the area it breaks). Each must be caught within the default
# budget (DEFAULT_EXAMPLES, 300 per op); the seed makes the run, and the test, repeatable.
# bench/fuzz.py measures the same over five seeds (each found in at least four).
DEFECTS = [
    ("concat_as_push", "resolve", "a write method"),
    ("or_does_not_wait", "run", "|| waiting"),
    ("instance_shadowing", "resolve", "instance shadowing"),
    ("no_dangling_reference", "check", "a diagnostic"),
    ("error_to_value_branch", "run", "an error routed to the wrong branch"),
    ("shallow_merge", "resolve", "a deep merge"),
    ("null_is_present", "resolve", "null in ||"),
    ("instance_under_global", "resolve", "the order of the layers"),
    ("last_is_first", "resolve", "index -1"),
    ("last_is_first", "run", "index -1 in a parameter"),
]
#: What a minimal case never holds: members no difference needs.
NOISE = ('"_call": {', '"_outputMethod": "set"')


@pytest.mark.slow
@pytest.mark.parametrize(("name", "op", "area"), DEFECTS, ids=[f"{d[0]}-{d[1]}" for d in DEFECTS])
def test_each_seeded_defect_is_caught_and_shrunk(name: str, op: str, area: str,
                                                tmp_path: pathlib.Path) -> None:
    code, out, err = cli("fuzz", "--against", script(name), "--ops", op, "--seed", "0",
                         "--save", str(tmp_path))
    assert code == 1, f"{area} not caught:\n{out}{err}"
    found = re.search(r"found at example (\d+)", out)
    assert found and int(found.group(1)) <= DEFAULT_EXAMPLES
    [saved] = list(tmp_path.iterdir())
    vector = json.loads(saved.read_text(encoding="utf-8"))
    # Minimal: two messages and two calls at most, and nothing the difference does not need.
    assert len(vector["context"]) <= 2, vector
    assert len(vector.get("plan", [])) <= 2, vector
    text = json.dumps(vector, ensure_ascii=False)
    assert not [n for n in NOISE if n in text], vector
    assert "the adapter answered:" in vector["description"]
    assert json.dumps(vector, ensure_ascii=False, indent=2) in out  # printed as saved
    # Ready to commit: obelisk passes it, the defect fails it.
    assert check_vector(vector) == []
    code, out, _ = cli("conformance", str(saved), "--against", script(name))
    assert code == 1 and out.splitlines()[-1] == "0 passed, 1 failed"


@pytest.mark.slow
def test_obelisk_adapter_agrees_with_obelisk() -> None:
    code, out, err = cli("fuzz", "--against", OBELISK_ADAPTER, "--seed", "0")
    assert code == 0, out + err
    for op in ("resolve", "check", "run"):
        assert f"{op}: no difference in {DEFAULT_EXAMPLES} examples" in out


@pytest.mark.slow
def test_the_same_seed_gives_the_same_cases() -> None:
    argv = ("fuzz", "--against", script("no_dangling_reference"), "--ops", "check",
            "--seed", "7")
    first, second = cli(*argv), cli(*argv)
    assert first == second and first[0] == 1


@pytest.mark.slow
def test_unsupported_ops_are_skipped() -> None:
    code, out, _ = cli("fuzz", "--against", script("misbehaving", "--ops", "resolve"),
                       "--ops", "check,run", "--seed", "0")
    assert code == 0
    assert "check: skipped, the adapter does not list it in hello" in out


@pytest.mark.parametrize("argv", [
    ["fuzz", "--against", OBELISK_ADAPTER, "--ops", "fly"],
    ["fuzz", "--against", OBELISK_ADAPTER, "--examples", "0"],
    ["fuzz", "--against", "/nonexistent/adapter"],
    ["fuzz"],
])
def test_fuzz_bad_usage_exits_2(argv: list[str]) -> None:
    code, out, err = cli(*argv)
    assert code == 2 and "Traceback" not in out + err


@pytest.mark.slow
def test_assert_conforms_passes_for_obelisk_and_fails_with_a_vector() -> None:
    with Adapter(OBELISK_ADAPTER) as adapter:
        assert_conforms(adapter, examples=25, seed=1)
    with Adapter(script("no_dangling_reference")) as adapter, pytest.raises(
            AssertionError) as caught:
        assert_conforms(adapter, vectors=False, ops=["check"], examples=50, seed=0)
    assert "differs from obelisk on check" in str(caught.value)
    assert '"code": "dangling-reference"' in str(caught.value)


@pytest.mark.slow
def test_assert_conforms_lists_failing_vectors() -> None:
    with Adapter(script("concat_as_push")) as adapter, pytest.raises(AssertionError) as caught:
        assert_conforms(adapter, ops=[])
    assert "vectors failed on" in str(caught.value) and "FAIL " in str(caught.value)


@pytest.mark.slow
def test_import_obelisk_does_not_import_hypothesis() -> None:
    code = ("import sys, obelisk, obelisk.cli, obelisk.kit.conformance, obelisk.cli.kit, "
            "obelisk.kit.client, obelisk.kit.server, obelisk.kit.pack; "
            "print('hypothesis' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.slow
def test_fuzz_without_hypothesis_says_how_to_install_it() -> None:
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "from obelisk.cli import main\n"
            f"sys.exit(main(['fuzz', '--against', {OBELISK_ADAPTER!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'obelisk[testing]'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_obelisk_testing_without_hypothesis_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['hypothesis'] = None\nimport obelisk.testing"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("ImportError: obelisk.testing needs hypothesis, which is not installed; "
                    "install it with pip install 'obelisk[testing]'")
    assert "During handling" not in done.stderr  # one error, not a chain of two


def test_the_cli_states_the_fuzzer_s_default_budget() -> None:
    from obelisk.cli import kit as kit_cli

    assert kit_cli.DEFAULT_EXAMPLES == DEFAULT_EXAMPLES


@pytest.mark.parametrize("name", ["shallow_merge", "null_is_present", "instance_under_global",
                                  "last_is_first"])
def test_each_new_defect_adapter_has_its_defect(name: str, tmp_path: pathlib.Path) -> None:
    """The seeded defects are real: each fails the one hand-written vector of its area."""
    vectors = tmp_path / "v.json"
    vectors.write_text(json.dumps(SEEDED, ensure_ascii=False), encoding="utf-8")
    code, out, _ = cli("conformance", str(vectors), "--against", script(name))
    assert code == 1 and out.splitlines()[-1] == f"{len(SEEDED) - 1} passed, 1 failed", out
    assert f"FAIL seeded/{name} " in out


SEEDED = [
    {"id": "seeded/shallow_merge", "context": [
        {"type": "state", "state": {"a": {"x": 1, "y": 2}}},
        {"type": "state", "state": {"a": {"x": 3}}}], "cases": [{"ref": "†state.a.y", "value": 2}]},
    {"id": "seeded/null_is_present", "context": [{"type": "state", "state": {"a": None}}],
     "cases": [{"ref": "†state.a || 'x'", "value": "x"}]},
    {"id": "seeded/instance_under_global", "context": [
        {"type": "state", "_instance": "①", "state": {"a": 1}}, {"type": "state", "state": {"a": 2}}],
     "cases": [{"ref": "†state.a", "instance": "①", "value": 1}]},
    {"id": "seeded/last_is_first", "context": [{"type": "state", "state": {"l": [1, 2, 3]}}],
     "cases": [{"ref": "†state.l.-1", "value": 3}]},
]


class _ShallowMerge:
    """In process, the shallow_merge defect: every merge (the default of a message
    without a path, too) applied as assign."""

    def supports(self, op: object) -> bool:
        return True

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        context = [{**m, "_outputMethod": "assign"} if m.get("_outputMethod", "merge") == "merge"
                   else m for m in request["context"]]
        return local.answer({**request, "context": context})


def test_a_difference_is_stripped_of_the_members_it_does_not_need() -> None:
    """simplify takes out a message's _call and an _outputMethod that changes nothing,
    and keeps what the difference needs."""
    request = {"op": "resolve", "ref": "†state.a.y", "instance": None, "context": [
        {"type": "state", "state": {"a": {"x": 1, "y": 2}}, "_outputMethod": "set",
         "_call": {"_tool": "t"}},
        {"type": "data", "kind": "state", "data": {"a": {"x": 3}}, "_outputMethod": "merge"}]}
    assert compare(_ShallowMerge(), "resolve", request)
    assert simplify(_ShallowMerge(), "resolve", request)["context"] == [
        {"type": "state", "state": {"a": {"x": 1, "y": 2}}},
        {"type": "data", "kind": "state", "data": {"a": {"x": 3}}}]
    # The difference needs the second message's kind: without it, it writes †data.
    assert not compare(_ShallowMerge(), "resolve", {**request, "context": [
        request["context"][0], {"type": "data", "data": {"a": {"x": 3}}}]})
