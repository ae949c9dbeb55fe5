"""docs/implementers.md: the JavaScript adapter shown there works, and the fuzzer finds
what it gets wrong."""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import shutil

import pytest
from kit_helpers import cli

from obelisk.kit.client import AdapterClient

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "implementers.md"
NODE = shutil.which("node")


def toy_adapter(folder: pathlib.Path) -> str:
    [source] = re.findall(r"```js\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    path = folder / "toy-adapter.js"
    path.write_text(source, encoding="utf-8")
    return f"{shlex.quote(str(NODE))} {shlex.quote(str(path))}"


@pytest.mark.slow
@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_documented_javascript_adapter(tmp_path: pathlib.Path) -> None:
    command = toy_adapter(tmp_path)
    with AdapterClient(command) as client:
        client.start()
        assert client.name == "toy" and client.ops == frozenset({"resolve"})
        context = [{"type": "state", "state": {"a": {"b": [1, 2]}}}]
        assert client.ask({"op": "resolve", "context": context, "ref": "†state.a.b.-1",
                           "instance": None}) == {"value": 2}
    vector = {"id": "toy/simple", "context": [{"type": "state", "state": {"a": 1}}],
              "cases": [{"ref": "†state.a", "value": 1}, {"ref": "†state.b", "missing": True}]}
    (tmp_path / "v.json").write_text(json.dumps(vector), encoding="utf-8")
    code, out, _ = cli("conformance", str(tmp_path / "v.json"), "--against", command)
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed")
    code, out, _ = cli("fuzz", "--against", command, "--ops", "resolve", "--seed", "1")
    assert code == 1 and "the minimal case as a conformance vector" in out
