"""docs/implementers.md: the JavaScript adapter shown there works, and the fuzzer finds
what it gets wrong."""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import shutil

import pytest
from clirun import cli

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


def _ci_snippet() -> tuple[str, list[str]]:
    """implementers.md's CI snippet: the command that builds the wheel (in its comment),
    and the command of each ``- run:`` step."""
    [block] = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    [build] = [line.lstrip("#").strip() for line in block.splitlines()
               if line.lstrip("# ").startswith("pip wheel")]
    steps = [line.removeprefix("- run: ") for line in block.splitlines()
             if line.startswith("- run: ")]
    return build, steps


@pytest.mark.slow
def test_the_ci_snippet_installs_from_what_exists(tmp_path: pathlib.Path) -> None:
    """The snippet's wheel is built as its comment says, installed in a fresh environment
    by its first step, and its steps pass for obelisk's own adapter."""
    import os
    import subprocess
    import sys

    import obelisk

    build, steps = _ci_snippet()
    assert f"obelisk-{obelisk.__version__}-py3-none-any.whl[testing]" in steps[0]
    root = pathlib.Path(__file__).resolve().parents[2]
    repo = tmp_path / "my-engine"
    repo.mkdir()
    # A copy of the checkout: building in place would leave a build/ folder in it.
    source = tmp_path / "obelisk"
    shutil.copytree(root, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "site", "*.egg-info", "__pycache__"))
    argv = shlex.split(build.replace("path/to/obelisk", str(source)))
    assert argv[:2] == ["pip", "wheel"]
    subprocess.run([sys.executable, "-m", *argv], cwd=repo, check=True, capture_output=True)
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
           "VIRTUAL_ENV": str(env_dir)}
    env.pop("PYTHONPATH", None)
    for step in steps:
        # Our adapter stands for yours, and a short fuzz for the documented one.
        command = step.replace("./my-engine --adapter", "obelisk adapter").replace(
            "--examples 300", "--examples 10")
        done = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{step}\n{done.stdout}\n{done.stderr}"
    installed = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                                "import obelisk, hypothesis; print(obelisk.__file__)"],
                               cwd=tmp_path, capture_output=True, text=True, check=True)
    assert str(env_dir) in installed.stdout  # the wheel's copy, not this checkout
    # The examples ship in the wheel: they run right after the install, with no checkout.
    tried = subprocess.run(
        ["bash", "-c", "python -m obelisk.examples ex && obelisk run ex/payment.json "
                       "--activities obelisk.examples.shop:ACTIVITIES"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert tried.returncode == 0 and tried.stdout.endswith("status: completed\n"), tried.stderr
