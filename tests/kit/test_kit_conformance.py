"""`obelisk conformance` on answers: the bundled pack, --against, --strict, --export, and
the JSON Schema of the vector format."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from clirun import cli
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from kit_helpers import OBELISK_ADAPTER, script

from obelisk import Context, WriteError, resolve
from obelisk.interpreters.reporting import views
from obelisk.kit.client import AdapterClient
from obelisk.kit.conformance import check_vector
from obelisk.kit.judge import context_of_views
from obelisk.kit.local import answer
from obelisk.kit.pack import pack_dir, pack_files, vector_schema
from obelisk.testing import contexts, expressions

RESOLVE_VECTOR = {"id": "t/resolve", "context": [{"type": "state", "a": 1}],
                  "cases": [{"ref": "†state.a", "value": 1}]}
RUN_VECTOR = {"id": "t/run", "plan": [{"_tool": "t", "_outputPath": "†state.x"}],
              "mocks": {"t": {"return": 1}},
              "expect": {"executed": [0], "values": [{"ref": "†state.x", "value": 1}]}}
AGENT_VECTOR = {"id": "t/agent", "solutions": [{"calls": [], "output": 1}],
                "expect": {"status": "completed", "ticks": 1, "output": 1}}


def write(folder: pathlib.Path, vectors: list[Any]) -> str:
    path = folder / "v.json"
    path.write_text(json.dumps(vectors, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_no_path_runs_the_bundled_pack() -> None:
    code, out, _ = cli("conformance", "-q")
    total = sum(len(json.loads(pathlib.Path(p).read_text(encoding="utf-8")))
                for p in pack_files())
    assert (code, out) == (0, f"{total} passed, 0 failed\n")
    assert total >= 250


def test_the_pack_is_package_data_and_tests_conformance_points_at_it() -> None:
    here = pathlib.Path(__file__).resolve().parents[1] / "conformance"
    assert here.resolve() == pathlib.Path(pack_dir()).resolve()


@pytest.mark.slow
@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_obelisk_adapter_passes_the_whole_pack(interpreter: str) -> None:
    adapter = f"{OBELISK_ADAPTER} --interpreter {interpreter}"
    code, out, err = cli("conformance", "-q", "--against", adapter)
    assert code == 0, out + err
    assert out == cli("conformance", "-q")[1]


@pytest.mark.slow
def test_against_gives_the_same_failures_as_in_process(tmp_path: pathlib.Path) -> None:
    wrong = {**RUN_VECTOR, "id": "t/wrong", "expect": {
        "executed": [], "values": [{"ref": "†state.x", "value": 2}],
        "errors": [{"call": 0, "type": "E"}]}}
    path = write(tmp_path, [RESOLVE_VECTOR, wrong])
    here = cli("conformance", path)
    there = cli("conformance", path, "--against", OBELISK_ADAPTER)
    assert here == there
    assert here[0] == 1 and "FAIL t/wrong" in here[1] and "values[0]: †state.x: expected" \
        in here[1]


@pytest.mark.slow
def test_unsupported_ops_are_counted_apart_and_fail_under_strict(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, [RESOLVE_VECTOR, RUN_VECTOR, AGENT_VECTOR])
    only_resolve = script("misbehaving", "--ops", "resolve")
    code, out, _ = cli("conformance", path, "--against", only_resolve)
    assert code == 0
    assert "UNSUPPORTED t/run: needs the run op" in out
    assert "UNSUPPORTED t/agent: needs the agent op" in out
    assert out.splitlines()[-1] == "1 passed, 0 failed, 2 unsupported"
    code, out, _ = cli("conformance", path, "--against", only_resolve, "--strict")
    assert code == 1
    assert "FAIL t/run: needs the run op" in out
    assert out.splitlines()[-1] == "1 passed, 0 failed, 2 unsupported"


def test_agent_vectors_are_judged_in_process() -> None:
    assert check_vector(AGENT_VECTOR) == []
    wrong = {**AGENT_VECTOR, "expect": {**AGENT_VECTOR["expect"], "output": 2}}
    assert check_vector(wrong) == ["output: expected 2, got 1"]


@pytest.mark.slow
def test_a_crashing_adapter_fails_the_vector_in_flight_and_the_run_goes_on(
        tmp_path: pathlib.Path) -> None:
    crash = {"id": "t/crash", "cases": [{"ref": "†crash", "missing": True}]}
    path = write(tmp_path, [RESOLVE_VECTOR, crash, {**RESOLVE_VECTOR, "id": "t/after"}])
    code, out, _ = cli("conformance", path, "--against", script("misbehaving"))
    assert code == 1
    assert "PASS t/resolve" in out and "PASS t/after" in out
    assert "FAIL t/crash" in out and "the adapter exited without answering" in out
    assert out.splitlines()[-1] == "2 passed, 1 failed"


@pytest.mark.slow
def test_a_seeded_defect_fails_vectors_of_the_pack() -> None:
    code, out, _ = cli("conformance", "-q", "--against", script("error_to_value_branch"))
    assert code == 1
    assert "\nFAIL " in "\n" + out
    assert " failed" in out.splitlines()[-1] and not out.splitlines()[-1].endswith(" 0 failed")


@pytest.mark.parametrize("argv", [
    ["conformance", "--against", "/nonexistent/adapter"],
    ["conformance", "--timeout", "0"],
    ["conformance", "x.json", "--export", "out"],
])
def test_bad_usage_exits_2_without_a_traceback(argv: list[str]) -> None:
    code, out, err = cli(*argv)
    assert code == 2, out + err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.slow
def test_export_writes_the_pack_its_schema_and_the_protocol(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "pack"
    code, out, _ = cli("conformance", "--export", str(target))
    assert code == 0 and str(target) in out
    exported = sorted(p.name for p in (target / "vectors").iterdir())
    assert exported == sorted(pathlib.Path(p).name for p in pack_files())
    protocol = (target / "PROTOCOL.md").read_text(encoding="utf-8")
    assert '{"op": "hello"}' in protocol and "--against" in protocol
    schema = json.loads((target / "vector.schema.json").read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    code, out, _ = cli("conformance", "-q", str(target / "vectors"))
    assert code == 0


def test_every_vector_of_the_pack_validates_against_the_schema() -> None:
    schema = vector_schema()
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    for path in pack_files():
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        errors = [e.message for e in validator.iter_errors(data)]
        assert errors == [], path


@pytest.mark.parametrize("vector", [
    {"id": "x"},                                              # neither cases nor plan
    {"id": "x", "cases": [], "extra": 1},                     # unknown field
    {"id": "x", "plan": []},                                  # plan without expect
    {"id": "x", "cases": [{"ref": "†a", "value": 1, "missing": True}]},
    {"id": "x", "cases": [{"ref": "†a", "error": "oops"}]},
    {"id": "x", "plan": [], "expect": {"executed": ["0"]}},
    {"id": "x", "plan": [{"_tool": "t"}], "mocks": {"t": {"return": 1, "echo": True}},
     "expect": {"executed": [0]}},
    {"id": "", "cases": []},
    {"id": "x", "solutions": [], "expect": {"status": "done"}},
])
def test_the_schema_refuses_what_the_runner_refuses(vector: dict[str, Any]) -> None:
    assert not Draft202012Validator(vector_schema()).is_valid(vector)
    if "solutions" not in vector:
        assert check_vector(vector)


def read(context: Context, ref: str, instance: str | None) -> Any:
    try:
        return ("value", resolve(context, ref, instance))
    except WriteError:
        return ("write",)
    except Exception as exc:  # syntax errors are the same on both sides
        return (type(exc).__name__,)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(contexts(), st.lists(st.tuples(expressions(), st.sampled_from([None, "①", "②", "③"])),
                            max_size=6))
def test_values_judged_over_views_read_as_the_final_context(
        messages: list[Any], reads: list[tuple[str, str | None]]) -> None:
    """`values` cases are judged over a run answer's views; a context rebuilt from them
    answers every read as the context itself, write errors included."""
    context = Context.of(messages)
    rebuilt = context_of_views(views(context))
    kinds = sorted(context.kinds)
    for kind in kinds:  # the reads of whole kinds, and the generated ones
        reads = [*reads, (f"†{kind}", None), (f"†{kind}", "①")]
    for ref, instance in reads:
        assert read(rebuilt, ref, instance) == read(context, ref, instance), (ref, instance)


@pytest.mark.slow
def test_the_pack_leaves_the_example_generator_to_each_implementation() -> None:
    """A dry run's example for a tool without a mock is each implementation's choice
    (any value its _output schema accepts): one whose examples differ passes the pack."""
    other = script("other_examples")
    vector = next(v for p in pack_files() for v in json.loads(
        pathlib.Path(p).read_text(encoding="utf-8")) if v["id"] == "run/example-from-output-schema")
    request = {"op": "run", "context": [], "tools": vector["tools"], "plan": vector["plan"],
               "mocks": {}, "instances": False}
    with AdapterClient(other) as client:
        client.start()
        theirs = client.ask(request)
    assert theirs["views"] != answer(request)["views"]  # the adapter's examples do differ
    code, out, _ = cli("conformance", "-q", "--against", other)
    assert (code, out.splitlines()[-1]) == (0, cli("conformance", "-q")[1].strip())
