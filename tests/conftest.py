"""Shared test settings.

Hypothesis runs derandomized under CI (``CI`` set), so a red run can be reproduced
exactly; locally it explores new examples every run. The fast loop, ``pytest -m "not
slow"``, gives each property that does not ask for its own number of examples ten of
them (the ``quick`` profile) instead of a hundred: it is the loop of someone changing
code; the whole suite, in CI, runs every property in full.

``OBELISK_PYRSISTENT=public`` runs the suite on pyrsistent's public API instead of the
kernel room's bucket reads (``obelisk.core.pmaps``): the general path, tested whole. The
switch is made here, before any test module imports obelisk.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

if os.environ.get("OBELISK_PYRSISTENT") == "public":
    from obelisk.core import pmaps

    pmaps.use_public_api()

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.register_profile("quick", deadline=None, max_examples=10)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config: pytest.Config) -> None:
    """The fast loop (``-m "not slow"``, outside CI, no profile asked for) is quick."""
    if (config.getoption("markexpr", "") == "not slow" and not os.environ.get("CI")
            and not config.getoption("hypothesis_profile", None)):
        settings.load_profile("quick")
