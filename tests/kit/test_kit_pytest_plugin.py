"""The kit's pytest plugin: `pytest --obelisk-against 'CMD'` runs one test per vector, the
vector's id its name, the difference its failure message, unsupported vectors skipped.
Each test runs pytest in a subprocess, as another implementation's CI does."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from clirun import cli
from kit_helpers import OBELISK_ADAPTER, script

from obelisk.kit.pack import pack_files

PACK_IDS = sorted(v["id"] for p in pack_files()
                  for v in json.loads(pathlib.Path(p).read_text(encoding="utf-8")))


def pytest_run(folder: pathlib.Path, *argv: str) -> tuple[int, str, dict[str, tuple[str, str]]]:
    """Run pytest in ``folder``; (exit code, output, {test name: (outcome, message)})."""
    report = folder / "report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           f"--junit-xml={report}", *argv], cwd=folder, capture_output=True,
                          text=True, timeout=600)
    tests: dict[str, tuple[str, str]] = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            outcome, message = "passed", ""
            for kind in ("failure", "skipped", "error"):
                found = case.find(kind)
                if found is not None:
                    outcome, message = kind, (found.get("message") or "") + (found.text or "")
            tests[case.get("name", "")] = (outcome, message)
    return done.returncode, done.stdout + done.stderr, tests


@pytest.mark.slow
def test_each_vector_of_the_pack_is_a_test_named_by_its_id(tmp_path: pathlib.Path) -> None:
    (tmp_path / "test_own.py").write_text("def test_own():\n    pass\n", encoding="utf-8")
    code, out, tests = pytest_run(tmp_path, "--obelisk-against", OBELISK_ADAPTER)
    assert code == 0, out
    assert sorted(set(tests) - {"test_own"}) == PACK_IDS  # the project's own test, too
    assert {outcome for outcome, _ in tests.values()} == {"passed"}
    assert f"collected {len(PACK_IDS) + 1} items" in out


@pytest.mark.slow
def test_a_defect_fails_the_vectors_it_breaks_with_the_difference(
        tmp_path: pathlib.Path) -> None:
    defect = script("concat_as_push")
    code, out, tests = pytest_run(tmp_path, "--obelisk-against", defect)
    assert code == 1
    failed = {name: message for name, (outcome, message) in tests.items()
              if outcome == "failure"}
    # The same vectors, and the same differences, as obelisk conformance --against.
    _, text, _ = cli("conformance", "-q", "--against", defect)
    expected = {line.split()[1]: line for line in text.splitlines() if line.startswith("FAIL ")}
    assert set(failed) == set(expected) and failed
    assert "case 0: †state.list: expected value [1, 2], got value [[1, 2]]" in failed[
        "method/concat-onto-missing"]
    assert "Traceback" not in out and "pytest_plugin.py" not in "".join(failed.values())


@pytest.mark.slow
def test_unsupported_vectors_are_skipped_and_fail_under_strict(tmp_path: pathlib.Path) -> None:
    vectors = tmp_path / "vectors.json"
    vectors.write_text(json.dumps([
        {"id": "t/resolve", "context": [{"type": "state", "a": 1}],
         "cases": [{"ref": "†state.a", "value": 1}]},
        {"id": "t/run", "plan": [{"_tool": "t", "_outputPath": "†state.x"}],
         "mocks": {"t": {"return": 1}}, "expect": {"executed": [0]}}]), encoding="utf-8")
    only_resolve = script("misbehaving", "--ops", "resolve")
    code, out, tests = pytest_run(tmp_path, "--obelisk-against", only_resolve,
                                  "--obelisk-vectors", str(vectors))
    assert code == 0, out
    assert tests["t/resolve"] == ("passed", "")
    outcome, message = tests["t/run"]
    assert outcome == "skipped"
    assert "needs the run op, which misbehaving does not list in hello" in message
    code, _, tests = pytest_run(tmp_path, "--obelisk-against", only_resolve,
                                "--obelisk-vectors", str(vectors), "--obelisk-strict")
    assert code == 1 and tests["t/run"][0] == "failure"


@pytest.mark.slow
def test_k_selects_vectors_by_id_and_a_bad_file_fails(tmp_path: pathlib.Path) -> None:
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    code, _, tests = pytest_run(tmp_path, "--obelisk-against", OBELISK_ADAPTER,
                                "--obelisk-vectors", str(tmp_path / "bad.json"),
                                "--obelisk-vectors", pack_files()[0])
    assert code == 1
    [(name, (outcome, message))] = [(n, t) for n, t in tests.items() if t[0] != "passed"]
    assert outcome == "failure" and name.endswith("bad.json") and "bad.json" in message
    code, out, tests = pytest_run(tmp_path, "--obelisk-against", OBELISK_ADAPTER,
                                  "-k", "delegate-anonymous")
    assert (code, list(tests)) == (0, ["agent/delegate-anonymous"]), out


@pytest.mark.slow
def test_an_adapter_that_does_not_start_fails_every_vector_and_empty_is_usage(
        tmp_path: pathlib.Path) -> None:
    vectors = tmp_path / "v.json"
    vectors.write_text(json.dumps({"id": "t/a", "cases": [{"ref": "1", "value": 1}]}),
                       encoding="utf-8")
    code, _, tests = pytest_run(tmp_path, "--obelisk-against", "/nonexistent/adapter",
                                "--obelisk-vectors", str(vectors))
    assert code == 1
    outcome, message = tests["t/a"]
    assert outcome == "failure" and "the adapter (/nonexistent/adapter) did not start" in message
    code, out, _ = pytest_run(tmp_path, "--obelisk-against", " ")
    assert code == 4 and "--obelisk-against needs the command that starts the adapter" in out


@pytest.mark.slow
def test_without_the_option_the_plugin_does_nothing(tmp_path: pathlib.Path) -> None:
    (tmp_path / "test_own.py").write_text("def test_own():\n    pass\n", encoding="utf-8")
    code, out, tests = pytest_run(tmp_path)
    assert (code, list(tests)) == (0, ["test_own"]), out
    code, out, tests = pytest_run(tmp_path, "-p", "no:obelisk")
    assert (code, list(tests)) == (0, ["test_own"]), out
    done = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "--obelisk-against=COMMAND" in done.stdout  # the entry point registered it
