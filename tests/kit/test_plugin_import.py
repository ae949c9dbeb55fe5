"""The kit's pytest plugin is loaded by pytest before any conftest runs: it must leave
obelisk un-imported, so that ``OBELISK_PYRSISTENT=public`` (the README's second pytest run)
can still switch pyrsistent's fast operations off in tests/conftest.py."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_plugin_imports_nothing_else_of_obelisk() -> None:
    done = _run("import sys, obelisk.kit.pytest_plugin\n"
                "print(sorted(m for m in sys.modules if m.startswith('obelisk.')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("['obelisk.core', 'obelisk.core.lazy', 'obelisk.kit', "
                                   "'obelisk.kit.pytest_plugin']")


def test_the_switch_to_the_public_api_works_after_the_plugin_is_loaded() -> None:
    done = _run("import obelisk.kit.pytest_plugin\n"
                "from obelisk.core import pmaps\n"
                "pmaps.use_public_api()\n"
                "print(pmaps.FAST)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_switch_still_refuses_a_module_that_took_the_fast_operations() -> None:
    done = _run("import obelisk.core.values\n"
                "from obelisk.core import pmaps\n"
                "pmaps.use_public_api()")
    assert done.returncode != 0
    assert "switch to the public API before importing obelisk.core." in done.stderr
