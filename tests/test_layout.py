"""The source layout: core/, compiler/ and interpreters/ import only as obelisk.* packages."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", ["core", "compiler", "interpreters", "core.values",
                                    "compiler.parse", "interpreters.machine", "examples",
                                    "examples.shop"])
def test_top_level_names_fail_with_a_clear_message(module: str) -> None:
    # From the repository root the folders are importable by their own names; a second
    # copy of core would hold a second MISSING, so the import must fail and say why.
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    package = module.partition(".")[0]
    assert done.returncode == 1
    assert f"ImportError: import obelisk.{package}, not {package}:" in done.stderr


def test_the_obelisk_names_import_from_the_root() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import obelisk.core.values as v, obelisk; "
                               "assert obelisk.MISSING is v.MISSING; print('ok')"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_every_subpackage_of_obelisk_is_installed() -> None:
    # setuptools installs only the packages pyproject.toml lists: a new subpackage left out
    # works from the source tree and is missing from the wheel.
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    listed = text.split("[tool.setuptools]", 1)[1].split("]", 1)[0]
    # os.walk follows the source-layout symlinks (obelisk/core -> ../core); glob would not.
    found = sorted(
        pathlib.Path(top) for top, _, files in os.walk(ROOT / "obelisk", followlinks=True)
        if "__init__.py" in files
    )
    for folder in found[1:]:  # the first is obelisk/ itself
        package = ".".join(("obelisk", *folder.relative_to(ROOT / "obelisk").parts))
        assert f'"{package}"' in listed, f"add {package} to [tool.setuptools] packages"
